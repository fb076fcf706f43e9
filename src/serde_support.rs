//! Serde helpers for the configuration types: durations in milliseconds,
//! environments as objects, and the defaults a missing field takes.

use crate::client::ClientConfig;

/// The value a missing field of a deserialised [`ClientConfig`] takes: the
/// defaults of [`ClientConfig::new`]. A missing `command` stays empty, which
/// [`ClientConfig::validate`] refuses, naming `command`.
pub(crate) fn client_defaults() -> ClientConfig {
    ClientConfig::new("")
}

/// A [`Duration`](std::time::Duration) as a whole number of milliseconds.
pub(crate) mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// An environment, a `Vec<(name, value)>` in order, as a JSON object.
pub(crate) mod env_map {
    use std::fmt;

    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    use crate::secret::EnvValue;

    pub(crate) fn serialize<S: Serializer>(
        env: &[(String, EnvValue)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(env.len()))?;
        for (k, v) in env {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, EnvValue)>, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Vec<(String, EnvValue)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of environment variables")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut env: Vec<(String, EnvValue)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, EnvValue>()? {
                    // A repeated name: the last value wins, as in `ClientConfig::env`.
                    env.retain(|(old, _)| *old != k);
                    env.push((k, v));
                }
                Ok(env)
            }
        }
        d.deserialize_map(Pairs)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use crate::{Backoff, ClientConfig, EraPreference, Secret, StderrMode};

    #[test]
    fn a_client_config_round_trips_through_json() {
        let mut config = ClientConfig::new("/usr/bin/srv")
            .args(["--flag", "x y"])
            .env("PLAIN", "1")
            .cd("/tmp")
            .stderr(StderrMode::File("/tmp/log".into()))
            .era(EraPreference::Stateful)
            .request_timeout(Duration::from_millis(1500))
            .backoff(Backoff {
                initial: Duration::from_millis(5),
                max: Duration::from_millis(50),
                factor: 3.0,
            })
            .max_reconnects(7);
        config = config.name("srv");
        let v = serde_json::to_value(&config).unwrap();
        assert_eq!(v["request_timeout_ms"], 1500);
        assert_eq!(v["env"], json!({ "PLAIN": "1" }));
        assert_eq!(v["stderr"], json!({ "file": "/tmp/log" }));
        assert_eq!(v["era"], "legacy");
        assert_eq!(
            v["backoff"],
            json!({ "initial_ms": 5, "max_ms": 50, "factor": 3.0 })
        );
        let back: ClientConfig = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), v);
        assert_eq!(back.transport, config.transport);
        assert_eq!(back.get_max_reconnects(), 7);
    }

    #[test]
    fn eras_are_written_with_their_old_names_and_read_with_both() {
        use crate::protocol::Era;
        for (pref, era, written, also) in [
            (
                EraPreference::Stateless,
                Era::Stateless,
                "modern",
                "stateless",
            ),
            (EraPreference::Stateful, Era::Stateful, "legacy", "stateful"),
        ] {
            assert_eq!(serde_json::to_value(pref).unwrap(), written);
            assert_eq!(serde_json::to_value(era).unwrap(), written);
            assert_eq!(era.as_str(), written);
            for name in [written, also] {
                assert_eq!(
                    serde_json::from_value::<EraPreference>(json!(name)).unwrap(),
                    pref
                );
                assert_eq!(serde_json::from_value::<Era>(json!(name)).unwrap(), era);
            }
        }
        assert_eq!(serde_json::to_value(EraPreference::Auto).unwrap(), "auto");
        assert!(serde_json::from_value::<EraPreference>(json!("sideways")).is_err());
    }

    #[test]
    fn missing_fields_take_their_defaults_and_unknown_ones_are_refused() {
        let c: ClientConfig = serde_json::from_value(json!({ "command": "x" })).unwrap();
        let d = ClientConfig::new("x");
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            serde_json::to_value(&d).unwrap()
        );
        let e = serde_json::from_value::<ClientConfig>(json!({ "command": "x", "timeout": 1 }))
            .unwrap_err();
        assert!(e.to_string().contains("timeout"), "{e}");
        let c: ClientConfig = serde_json::from_value(json!({})).unwrap();
        assert_eq!(c.validate().unwrap_err().key, "command");
    }

    #[test]
    fn secrets_in_a_serialised_config_are_redacted() {
        let config = ClientConfig::new("x").env("TOKEN", Secret::new("ghp_very_secret"));
        let text = serde_json::to_string(&config).unwrap();
        assert!(!text.contains("ghp_very_secret"), "{text}");
        assert!(text.contains(r#""TOKEN":{"redacted":true}"#), "{text}");
        assert!(serde_json::from_str::<ClientConfig>(&text).is_err());
    }
}

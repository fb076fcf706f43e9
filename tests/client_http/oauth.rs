//! The client authorizing with a protected Streamable HTTP server
//! (`conduit_mcp::oauth`), against a small in-process resource and
//! authorization server (`tests/client_oauth_support`): discovery,
//! registration, PKCE and `resource`, the checks that stop a flow
//! (issuer, `iss`, resource), scopes and step-up, refresh, and tokens kept
//! in a file and reused.

use crate::client_oauth_support;
use crate::common;

use std::time::Duration;

use client_oauth_support::{AuthFake, Knobs, Victim};
use conduit_mcp::oauth::{AuthError, FileStore, OAuth, OAuthConfig, TokenStore, UrlRule};
use conduit_mcp::{Client, ClientConfig, EraPreference, RequestOptions};

const REDIRECT: &str = "http://127.0.0.1:9/callback";

fn config(fake: &AuthFake, oauth: OAuth) -> ClientConfig {
    ClientConfig::http(fake.url())
        .oauth(oauth)
        .era(EraPreference::Stateful)
        .request_timeout(Duration::from_secs(20))
        .max_reconnects(0)
}

async fn start(fake: &AuthFake, oauth: OAuth) -> Client {
    let client = Client::start(config(fake, oauth)).await.expect("start");
    client.ready(Duration::from_secs(20)).await.expect("ready");
    client
}

#[tokio::test]
async fn a_protected_server_is_authorized_with_registration_pkce_and_resource_and_then_used() {
    let fake = AuthFake::start(Knobs {
        challenge_scope: Some("mcp:read".into()),
        ..Knobs::default()
    })
    .await;
    let oauth = OAuth::new(OAuthConfig::new(REDIRECT, fake.authorizer()));
    let client = start(&fake, oauth).await;
    let tools = client.list_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 1);
    crate::common::shutdown(client.stop().wait()).await;

    fake.seen(|s| {
        // Resource metadata from the challenge's URL, then the issuer's.
        assert!(s
            .metadata_gets
            .contains(&"/.well-known/oauth-protected-resource/mcp".into()));
        assert!(s
            .metadata_gets
            .contains(&"/.well-known/oauth-authorization-server".into()));
        assert_eq!(s.registrations.len(), 1, "one dynamic registration");
        let reg = &s.registrations[0];
        assert_eq!(reg["redirect_uris"][0], REDIRECT);
        assert_eq!(reg["application_type"], "native");
        assert!(reg["grant_types"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g == "refresh_token"));

        assert_eq!(s.authorizations.len(), 1);
        let a = &s.authorizations[0];
        assert_eq!(a["response_type"], "code");
        assert_eq!(a["client_id"], "client-1");
        assert_eq!(a["code_challenge_method"], "S256");
        assert_eq!(a["code_challenge"].len(), 43, "a base64url SHA-256");
        assert_eq!(a["resource"], fake.url());
        // The challenge's scope, and offline_access as the server offers it.
        assert_eq!(a["scope"], "mcp:read offline_access");
        assert!(a["state"].len() >= 16);

        assert_eq!(s.token_requests.len(), 1);
        let (t, basic) = &s.token_requests[0];
        assert_eq!(t["grant_type"], "authorization_code");
        assert_eq!(t["resource"], fake.url());
        assert!(t["code_verifier"].len() >= 43);
        assert!(!t.contains_key("client_secret"), "the secret goes in Basic");
        assert!(basic.as_deref().unwrap().starts_with("Basic "));

        // The first request went without a token; after authorizing,
        // every request carried the issued one.
        assert_eq!(s.mcp_tokens[0], None);
        let authorized: Vec<_> = s.mcp_tokens.iter().skip(1).collect();
        assert!(!authorized.is_empty());
        assert!(
            authorized.iter().all(|t| t.as_deref() == Some("access-2")),
            "{authorized:?}"
        );
    });
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_not_used() {
    let fake = AuthFake::start(Knobs {
        metadata_issuer: Some("https://attacker.example.com".into()),
        ..Knobs::default()
    })
    .await;
    let oauth = OAuth::new(OAuthConfig::new(REDIRECT, fake.authorizer()));
    let client = Client::start(config(&fake, oauth)).await.unwrap();
    let err = client
        .ready(Duration::from_secs(20))
        .await
        .err()
        .map(|e| e.to_string());
    let calls = client.list_tools().await.err().map(|e| e.to_string());
    crate::common::shutdown(client.stop().wait()).await;
    let text = format!("{err:?} {calls:?}");
    assert!(text.contains("attacker.example.com"), "{text}");
    fake.seen(|s| {
        assert!(s.registrations.is_empty());
        assert!(s.authorizations.is_empty());
        assert!(s.token_requests.is_empty());
    });
}

#[tokio::test]
async fn a_redirect_from_another_issuer_is_refused_before_the_code_is_exchanged() {
    let fake = AuthFake::start(Knobs {
        redirect_iss: Some("https://evil.example.com".into()),
        ..Knobs::default()
    })
    .await;
    let oauth = OAuth::new(OAuthConfig::new(REDIRECT, fake.authorizer()).max_attempts(1));
    let client = Client::start(config(&fake, oauth)).await.unwrap();
    let _ = client.ready(Duration::from_secs(20)).await;
    crate::common::shutdown(client.stop().wait()).await;
    fake.seen(|s| {
        assert_eq!(s.authorizations.len(), 1);
        assert!(s.token_requests.is_empty(), "the code was not exchanged");
    });
}

#[tokio::test]
async fn resource_metadata_for_another_server_stops_authorization() {
    let fake = AuthFake::start(Knobs {
        resource: Some("https://evil.example.com/mcp".into()),
        ..Knobs::default()
    })
    .await;
    let oauth = OAuth::new(OAuthConfig::new(REDIRECT, fake.authorizer()));
    let client = Client::start(config(&fake, oauth)).await.unwrap();
    let err = client
        .ready(Duration::from_secs(20))
        .await
        .err()
        .map(|e| e.to_string());
    crate::common::shutdown(client.stop().wait()).await;
    assert!(format!("{err:?}").contains("evil.example.com"), "{err:?}");
    fake.seen(|s| assert!(s.authorizations.is_empty() && s.registrations.is_empty()));
}

#[tokio::test]
async fn step_up_asks_for_the_union_of_scopes_and_the_call_goes_through() {
    let fake = AuthFake::start(Knobs {
        challenge_scope: Some("mcp:read".into()),
        call_scope: Some("mcp:write".into()),
        ..Knobs::default()
    })
    .await;
    let oauth = OAuth::new(OAuthConfig::new(REDIRECT, fake.authorizer()).offline_access(false));
    let client = start(&fake, oauth).await;
    let r = client
        .call_tool("t", serde_json::json!({}), RequestOptions::default())
        .await;
    crate::common::shutdown(client.stop().wait()).await;
    assert!(r.is_ok(), "{r:?}");
    fake.seen(|s| {
        let scopes: Vec<&str> = s
            .authorizations
            .iter()
            .map(|a| a["scope"].as_str())
            .collect();
        assert_eq!(scopes, ["mcp:read", "mcp:read mcp:write"]);
    });
}

#[tokio::test]
async fn step_up_that_never_satisfies_the_server_gives_up_after_the_limit() {
    let fake = AuthFake::start(Knobs {
        call_scope: Some("mcp:admin".into()),
        ..Knobs::default()
    })
    .await;
    // The server grants what is asked but never mcp:admin: make it so.
    let oauth = OAuth::new(OAuthConfig::new(REDIRECT, {
        let approve = fake.authorizer();
        move |mut req: conduit_mcp::oauth::AuthorizationRequest| {
            req.url = req.url.replace("mcp%3Aadmin", "mcp%3Aother");
            approve(req)
        }
    }));
    let client = start(&fake, oauth).await;
    let r = client
        .call_tool("t", serde_json::json!({}), RequestOptions::default())
        .await;
    crate::common::shutdown(client.stop().wait()).await;
    let text = r.expect_err("refused for good").to_string();
    assert!(text.contains("gave up after 3"), "{text}");
    // One authorization for the handshake's 401 (which then got
    // through), then 3 step-ups in a row for the call; not one more.
    fake.seen(|s| assert_eq!(s.authorizations.len(), 1 + 3, "{:?}", s.authorizations));
}

#[tokio::test]
async fn a_refused_token_is_refreshed_without_asking_the_user_again() {
    let fake = AuthFake::start(Knobs {
        challenge_scope: Some("mcp:read".into()),
        refresh: true,
        ..Knobs::default()
    })
    .await;
    let oauth = OAuth::new(OAuthConfig::new(REDIRECT, fake.authorizer()));
    let client = start(&fake, oauth).await;
    client.list_tools().await.expect("first");
    fake.revoke_access_tokens();
    client.list_tools().await.expect("after the refresh");
    crate::common::shutdown(client.stop().wait()).await;
    fake.seen(|s| {
        assert_eq!(s.authorizations.len(), 1, "the user was asked once");
        let grants: Vec<&str> = s
            .token_requests
            .iter()
            .map(|(t, _)| t["grant_type"].as_str())
            .collect();
        assert_eq!(grants, ["authorization_code", "refresh_token"]);
        let (refresh, _) = &s.token_requests[1];
        assert_eq!(refresh["refresh_token"], "refresh-2");
        assert_eq!(refresh["resource"], fake.url());
    });
}

#[tokio::test]
async fn tokens_kept_in_a_file_are_reused_by_the_next_client_and_only_the_owner_can_read_it() {
    let fake = AuthFake::start(Knobs::default()).await;
    let dir = common::tempdir("oauth-file-store");
    let path = dir.join("tokens.json");
    for _ in 0..2 {
        let oauth =
            OAuth::new(OAuthConfig::new(REDIRECT, fake.authorizer()).store(FileStore::new(&path)));
        let client = start(&fake, oauth).await;
        client.list_tools().await.expect("tools/list");
        crate::common::shutdown(client.stop().wait()).await;
    }
    fake.seen(|s| {
        assert_eq!(
            s.authorizations.len(),
            1,
            "the second client reused the token"
        );
        assert_eq!(s.registrations.len(), 1);
    });
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let stored = FileStore::new(&path).load(&fake.url()).unwrap().unwrap();
    assert_eq!(stored.issuer.as_deref(), Some(fake.base.as_str()));
    let shown = format!("{stored:?}");
    assert!(
        !shown.contains("access-") && !shown.contains("client-secret-1"),
        "{shown}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn two_writers_of_one_token_file_lose_none_of_each_other_s_records() {
    use conduit_mcp::oauth::StoredAuth;
    // Two stores on the same file, as two `mcp` processes have: each
    // adds its own servers' records at the same time.
    let dir = common::tempdir("oauth-file-store-race");
    let path = dir.join("tokens.json");
    const N: usize = 50;
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|who| {
            let store = FileStore::new(&path);
            std::thread::spawn(move || {
                let mut failed = 0;
                for i in 0..N {
                    let mut auth = StoredAuth::default();
                    auth.issuer = Some(format!("https://{who}.example"));
                    if store
                        .save(&format!("https://{who}{i}.example/mcp"), &auth)
                        .is_err()
                    {
                        failed += 1;
                    }
                }
                failed
            })
        })
        .collect();
    let failed: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
    let store = FileStore::new(&path);
    let kept = ["a", "b"]
        .iter()
        .flat_map(|who| (0..N).map(move |i| format!("https://{who}{i}.example/mcp")))
        .filter(|k| store.load(k).unwrap().is_some())
        .count();
    common::figure(
        "two writers of one token file, 50 records each",
        format!("{kept} of {} kept, {failed} saves failed", 2 * N),
    );
    assert_eq!((kept, failed), (2 * N, 0));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    std::fs::remove_dir_all(dir).ok();
}

/// `login` to `fake` (no user: the fake approves), its error.
async fn login_error(fake: &AuthFake) -> Option<AuthError> {
    let oauth = OAuth::new(OAuthConfig::new(REDIRECT, fake.authorizer()));
    let http = conduit_mcp::HttpOptions::new(fake.url());
    tokio::time::timeout(Duration::from_secs(30), oauth.login(&http))
        .await
        .expect("login ends")
        .err()
}

/// The refusal inside a login's error: `(what, origin, rule)`.
fn refusal(e: Option<AuthError>) -> (&'static str, String, UrlRule) {
    match e {
        Some(AuthError::Challenged { status: 401, error }) => match *error {
            AuthError::RefusedUrl { what, origin, rule } => (what, origin, rule),
            e => panic!("expected a refused URL, got {e:?}"),
        },
        e => panic!("expected a refused URL, got {e:?}"),
    }
}

#[tokio::test]
async fn a_server_cannot_make_the_client_fetch_a_local_url_with_a_query() {
    // The server on port A points its challenge at port B of this machine.
    let victim = Victim::start().await;
    let target = format!(
        "http://127.0.0.1:{}/internal/delete-everything?confirm=yes",
        victim.port
    );
    let fake = AuthFake::start(Knobs {
        resource_metadata: Some(target.clone()),
        ..Knobs::default()
    })
    .await;
    let err = login_error(&fake).await;
    common::figure(
        "GETs of the challenge's local URL with a query",
        victim.hits(),
    );
    assert_eq!(victim.hits(), 0, "{err:?}");
    let shown = err.as_ref().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        refusal(err),
        (
            "the protected resource metadata",
            format!("http://127.0.0.1:{}", victim.port),
            UrlRule::Query
        )
    );
    // The message names the origin, not the path or the query.
    assert!(
        !shown.contains("delete-everything") && !shown.contains("confirm"),
        "{shown}"
    );
    // Through a client, the same refusal.
    let oauth = OAuth::new(OAuthConfig::new(REDIRECT, fake.authorizer()));
    let client = Client::start(config(&fake, oauth)).await.unwrap();
    let err = client
        .ready(Duration::from_secs(20))
        .await
        .unwrap_err()
        .to_string();
    crate::common::shutdown(client.stop().wait()).await;
    assert!(err.contains("is refused") && err.contains("query"), "{err}");
    assert_eq!(victim.hits(), 0);
}

#[tokio::test]
async fn a_server_not_on_loopback_cannot_point_the_client_at_loopback_or_private_addresses() {
    let victim = Victim::start().await;
    let outside = client_oauth_support::outside_address();
    let port = victim.port;
    for (target, address, kind) in [
        (
            format!("https://127.0.0.1:{port}/.well-known/oauth-protected-resource"),
            "127.0.0.1",
            "loopback",
        ),
        // A name is resolved first: localhost is loopback.
        (
            format!("https://localhost:{port}/.well-known/oauth-protected-resource"),
            "",
            "loopback",
        ),
        (
            format!("https://[::ffff:127.0.0.1]:{port}/.well-known/oauth-protected-resource"),
            "::ffff:127.0.0.1",
            "loopback",
        ),
        (
            "https://10.255.255.1/.well-known/oauth-protected-resource".into(),
            "10.255.255.1",
            "private",
        ),
        (
            "https://169.254.169.254/latest/meta-data".into(),
            "169.254.169.254",
            "link-local",
        ),
    ] {
        let fake = AuthFake::start_at(
            outside,
            Knobs {
                resource_metadata: Some(target.clone()),
                ..Knobs::default()
            },
        )
        .await;
        match refusal(login_error(&fake).await) {
            (
                "the protected resource metadata",
                _,
                UrlRule::Internal {
                    address: a,
                    kind: k,
                },
            ) => {
                assert_eq!(k, kind, "{target}");
                if !address.is_empty() {
                    assert_eq!(a.to_string(), address, "{target}");
                }
            }
            other => panic!("{target}: {other:?}"),
        }
    }
    common::figure(
        "connections from a non-loopback server's flow to loopback",
        victim.hits(),
    );
    assert_eq!(victim.hits(), 0);
}

#[tokio::test]
async fn a_loopback_server_cannot_point_the_client_at_plain_http_elsewhere() {
    let victim = Victim::start().await;
    let outside = client_oauth_support::outside_address();
    let fake = AuthFake::start(Knobs {
        resource_metadata: Some(format!(
            "http://{outside}:{}/.well-known/oauth-protected-resource",
            victim.port
        )),
        ..Knobs::default()
    })
    .await;
    let err = login_error(&fake).await;
    common::figure("GETs of plain http off loopback", victim.hits());
    assert_eq!(victim.hits(), 0, "{err:?}");
    assert_eq!(
        refusal(err),
        (
            "the protected resource metadata",
            format!("http://{outside}:{}", victim.port),
            UrlRule::NotHttps
        )
    );
}

#[tokio::test]
async fn an_authorization_server_with_a_query_is_refused() {
    let victim = Victim::start().await;
    let fake = AuthFake::start(Knobs {
        authorization_servers: Some(vec![format!("http://127.0.0.1:{}/?tenant=x", victim.port)]),
        ..Knobs::default()
    })
    .await;
    assert_eq!(
        refusal(login_error(&fake).await),
        (
            "the authorization server",
            format!("http://127.0.0.1:{}", victim.port),
            UrlRule::Query
        )
    );
    assert_eq!(victim.hits(), 0);
}

#[tokio::test]
async fn discovery_follows_no_redirect_and_reads_no_more_than_its_byte_bound() {
    // The resource metadata redirects elsewhere: not followed (the flow
    // goes on with the next well-known URL, then the server's own origin).
    let victim = Victim::start().await;
    let fake = AuthFake::start(Knobs {
        metadata_redirect: Some(format!(
            "http://127.0.0.1:{}/.well-known/oauth-protected-resource",
            victim.port
        )),
        ..Knobs::default()
    })
    .await;
    let _ = login_error(&fake).await;
    assert!(fake.seen(|s| s.metadata_gets.len()) >= 2);
    assert_eq!(victim.hits(), 0, "a redirect was followed");

    // 2 MiB of resource metadata: refused past 1 MiB.
    let fake = AuthFake::start(Knobs {
        metadata_padding: 2 * 1024 * 1024,
        ..Knobs::default()
    })
    .await;
    match login_error(&fake).await {
        Some(AuthError::Challenged { error, .. }) => match *error {
            AuthError::Discovery { problem, .. } => {
                assert!(problem.contains("over 1048576 bytes"), "{problem}")
            }
            e => panic!("{e:?}"),
        },
        e => panic!("{e:?}"),
    }
}

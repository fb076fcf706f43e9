//! The tests' own SSE reader (`server_http_support/sse.rs`), checked here
//! once: every test binary that reads SSE includes it.

use crate::server_http_support::sse::Parser;

#[test]
fn events_are_read_whatever_the_line_ends_and_the_splits() {
    let wire = b"id: 1\ndata: a\ndata: b\n\n: ping\r\n\r\nretry: 500\r\nevent: x\r\ndata:\r\n\r\nid: 2\rdata: c\r\r";
    for cut in 0..=wire.len() {
        let mut p = Parser::new(1024);
        let mut got = p.feed(&wire[..cut]).unwrap();
        got.extend(p.feed(&wire[cut..]).unwrap());
        let data: Vec<&str> = got.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["a\nb", "", "c"], "cut at {cut}");
        assert_eq!(got[0].id.as_deref(), Some("1"));
        assert_eq!(got[1].event.as_deref(), Some("x"));
        assert_eq!(p.last_event_id(), Some("2"));
        assert_eq!(p.retry(), Some(500));
    }
}

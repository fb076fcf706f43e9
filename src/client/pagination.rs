//! The caps of a paginated list: a server decides how many pages a list
//! has (a fresh `nextCursor` for ever would grow a host by gigabytes in
//! seconds), so every `nextCursor` loop counts pages, items and the
//! bytes the pages hold once parsed, and stops with
//! [`Error::ListTooLong`] past any of the configured caps, or with
//! [`Error::RepeatedCursor`] when a cursor comes back (a loop). The whole
//! list has one deadline ([`list_timeout`](crate::client::ClientConfig::list_timeout)):
//! each page's request gets at most what is left of it, and
//! [`Error::ListTimeout`] says it ran out.
//!
//! [`Pager`] only counts; [`Client::list_all`](crate::client::Client::list_all) and
//! the typed `list_*` helpers fetch (the one loop, in `typed.rs`).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::client_config::ClientConfig;
use crate::error::{Error, ListCap};

/// The counts of one list being fetched, against the client's caps.
#[derive(Debug)]
pub(crate) struct Pager<'a> {
    method: &'a str,
    max_pages: usize,
    max_items: usize,
    max_bytes: usize,
    /// `list_timeout`, and when it runs out.
    timeout: Duration,
    deadline: Instant,
    pages: usize,
    items: usize,
    bytes: usize,
    /// Cursors received so far. What they hold is counted in `bytes`: each
    /// came in a page whose whole size was counted.
    seen: HashSet<String>,
}

impl<'a> Pager<'a> {
    /// A list of `method` with the caps of `config`.
    pub(crate) fn new(method: &'a str, config: &ClientConfig) -> Self {
        Self {
            method,
            max_pages: config.get_max_list_pages(),
            max_items: config.get_max_list_items(),
            max_bytes: config.get_max_list_bytes(),
            timeout: config.get_list_timeout(),
            deadline: Instant::now() + config.get_list_timeout(),
            pages: 0,
            items: 0,
            bytes: 0,
            seen: HashSet::new(),
        }
    }

    /// Counts a page of `items` items that holds `held` bytes once parsed.
    pub(crate) fn page(&mut self, items: usize, held: usize) -> Result<(), Error> {
        self.pages = self.pages.saturating_add(1);
        self.items = self.items.saturating_add(items);
        self.bytes = self.bytes.saturating_add(held);
        if self.bytes > self.max_bytes {
            return Err(self.too_long(ListCap::Bytes, self.max_bytes));
        }
        if self.items > self.max_items {
            return Err(self.too_long(ListCap::Items, self.max_items));
        }
        Ok(())
    }

    /// The cursor to fetch next, from the last page's `nextCursor`: `None`
    /// at the end of the list (no cursor, or an empty one).
    pub(crate) fn next(&mut self, cursor: Option<String>) -> Result<Option<String>, Error> {
        let Some(cursor) = cursor.filter(|c| !c.is_empty()) else {
            return Ok(None);
        };
        if self.pages >= self.max_pages {
            return Err(self.too_long(ListCap::Pages, self.max_pages));
        }
        if !self.seen.insert(cursor.clone()) {
            return Err(Error::RepeatedCursor {
                method: self.method.to_owned(),
                pages: self.pages,
            });
        }
        Ok(Some(cursor))
    }

    /// The time left for the next page; the list's error once none is.
    pub(crate) fn time_left(&self) -> Result<Duration, Error> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.timed_out());
        }
        Ok(left)
    }

    /// `error` of a page's request, or the list's own when the page timed
    /// out because the list's time ran out.
    pub(crate) fn page_failed(&self, error: Error) -> Error {
        match error {
            Error::Timeout { .. } if Instant::now() >= self.deadline => self.timed_out(),
            e => e,
        }
    }

    fn timed_out(&self) -> Error {
        Error::ListTimeout {
            method: self.method.to_owned(),
            limit: self.timeout,
            pages: self.pages,
        }
    }

    fn too_long(&self, cap: ListCap, limit: usize) -> Error {
        Error::ListTooLong {
            method: self.method.to_owned(),
            cap,
            limit,
            pages: self.pages,
            items: self.items,
            bytes: self.bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ClientConfig {
        ClientConfig::new("x")
            .max_list_pages(3)
            .max_list_items(10)
            .max_list_bytes(1000)
    }

    fn cap(e: Error) -> (ListCap, usize, usize, usize, usize) {
        match e {
            Error::ListTooLong {
                cap,
                limit,
                pages,
                items,
                bytes,
                ..
            } => (cap, limit, pages, items, bytes),
            e => panic!("{e}"),
        }
    }

    #[test]
    fn a_list_within_every_cap_ends_at_the_first_page_without_a_cursor() {
        let c = config();
        let mut p = Pager::new("tools/list", &c);
        p.page(4, 300).unwrap();
        assert_eq!(p.next(Some("a".into())).unwrap().as_deref(), Some("a"));
        p.page(4, 300).unwrap();
        assert_eq!(p.next(Some("b".into())).unwrap().as_deref(), Some("b"));
        p.page(2, 400).unwrap();
        // Exactly at every cap, and the end: fine.
        assert_eq!(p.next(None).unwrap(), None);
        assert_eq!(p.next(Some(String::new())).unwrap(), None);
    }

    #[test]
    fn each_cap_is_named_with_the_counts() {
        let c = config();
        let mut p = Pager::new("tools/list", &c);
        p.page(1, 10).unwrap();
        p.next(Some("a".into())).unwrap();
        p.page(1, 10).unwrap();
        p.next(Some("b".into())).unwrap();
        p.page(1, 10).unwrap();
        let e = p.next(Some("c".into())).unwrap_err();
        assert_eq!(cap(e), (ListCap::Pages, 3, 3, 3, 30));

        let mut p = Pager::new("tools/list", &c);
        let e = p.page(11, 10).unwrap_err();
        assert_eq!(cap(e), (ListCap::Items, 10, 1, 11, 10));

        let mut p = Pager::new("tools/list", &c);
        let e = p.page(1, 1001).unwrap_err();
        assert_eq!(cap(e), (ListCap::Bytes, 1000, 1, 1, 1001));
    }

    #[test]
    fn a_repeated_cursor_ends_the_list() {
        let c = config();
        let mut p = Pager::new("prompts/list", &c);
        p.page(1, 10).unwrap();
        p.next(Some("a".into())).unwrap();
        p.page(1, 10).unwrap();
        match p.next(Some("a".into())).unwrap_err() {
            Error::RepeatedCursor { method, pages } => {
                assert_eq!((method.as_str(), pages), ("prompts/list", 2))
            }
            e => panic!("{e}"),
        }
    }
}

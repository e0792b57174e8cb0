//! Unit tests of the typed webhooks, decoded without a server.

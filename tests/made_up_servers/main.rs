//! The made-up servers of issue 28's trials, one module per server (its fixture is
//! `tests/fixtures/made-up-server-N/`, written from docs/grammars.md alone): one test
//! binary, so that CI compiles and links them once (`cargo test --test made_up_servers
//! server_25::` runs one server's).

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod server_1;
mod server_10;
mod server_11;
mod server_12;
mod server_13;
mod server_14;
mod server_15;
mod server_16;
mod server_17;
mod server_18;
mod server_19;
mod server_20;
mod server_21;
mod server_22;
mod server_23;
mod server_24;
mod server_25;
mod server_26;
mod server_27;
mod server_28;
mod server_3;
mod server_33;
mod server_38;
mod server_4;
mod server_5;
mod server_6;
mod server_9;

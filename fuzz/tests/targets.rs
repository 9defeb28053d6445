//! The fuzz targets. Each holds for every input, or bolero reports the
//! input that broke it.

// The C API's entry points are unsafe fns, called here as C calls them:
// this crate's one unsafe.
#[allow(unsafe_code)]
mod c_api;

use std::collections::HashMap;
use std::io::Read;

use bolero::check;
use bolero::generator::TypeGenerator;
use dendro_wire_core::{
    ClockOffset, Error, Frame, FrameDecoder, Index, IndexKind, ProtocolError, Row, RowList, Rows,
    RowsBuilder, RowsHeader, Rule, Status, Subscriber, NO_INDEX_STATE,
};
use dendro_wire_std::receive::proxy::{parse_header, MAX_HEADER};
use dendro_wire_std::{FrameReader, OwnedFrame, ReadError};
use dendro_wire_test_support::dendro_map::with_view;
use dendro_wire_test_support::fixtures::handshake;
use dendro_wire_test_support::gen::Gen;
use dendro_wire_test_support::streams::read_all;

/// How many inputs a target tries under plain `cargo test`.
const ITERATIONS: usize = 1_000;

/// The frame limit the decoder targets run with: low enough that a claimed
/// length past it is common in arbitrary bytes.
const LIMIT: u32 = 1 << 20;

/// The sans-IO decoder on arbitrary bytes: never panics, never consumes
/// more than it was given, asks for more only when the buffer is short, an
/// accepted frame re-encodes to exactly the bytes it came from, and a
/// refusal is one it must be ([`refusal_holds`]).
#[test]
fn decode_arbitrary() {
    check!()
        .with_iterations(ITERATIONS)
        .for_each(|bytes: &[u8]| {
            let decoder = FrameDecoder::new().with_max_frame_bytes(LIMIT);
            // A receiver's own cut, right or wrong: never a panic.
            let _ = decoder.decode_cut(bytes);
            match decoder.decode(bytes) {
                Ok(Status::Complete((frame, used))) => {
                    assert!(used <= bytes.len());
                    // Decoded as cut, the length not read again: the same.
                    assert_eq!(decoder.decode_cut(&bytes[..used]), Ok(frame));
                    let mut out = vec![0; frame.buffer_len().expect("a decoded frame encodes")];
                    assert_eq!(frame.emit(&mut out), Ok(used));
                    assert_eq!(out, bytes[..used]);
                    let _ = frame.to_string();
                }
                Ok(Status::Incomplete { needed }) => {
                    assert!(needed > 0);
                    let whole = match decoder.frame_len(bytes) {
                        Ok(Status::Complete(n)) => n,
                        _ => 4,
                    };
                    assert_eq!(bytes.len() + needed, whole);
                }
                Err(e) => {
                    // A whole frame the decoder refused is refused as cut,
                    // for the same reason.
                    if let Ok(Status::Complete(total)) = decoder.frame_len(bytes) {
                        if let Some(whole) = bytes.get(..total) {
                            assert_eq!(decoder.decode_cut(whole).err(), Some(e));
                        }
                    }
                    refusal_holds(&decoder, bytes, e)
                }
            }
        });
}

/// What the decoder's refusal `e` of `bytes` must be: a decoding error; on
/// the length prefix, one its value breaks; else the frame's own, the same
/// with other bytes after it, inside it, and one dendro 0.6.1 shares unless
/// docs/PROTOCOL.md §8 makes this project stricter on its rule; and exactly
/// what `FrameReader` reports for the same frame in a stream.
fn refusal_holds(decoder: &FrameDecoder, bytes: &[u8], e: Error) {
    assert!(!e.is_encoding(), "{e}");
    // Fewer than four bytes are always too few, never wrong.
    let prefix = u32::from_le_bytes(bytes[..4].try_into().expect("four bytes"));
    let mut stream = b"dendro-repl\0\x01\x00".to_vec();
    stream.extend_from_slice(bytes);
    let mut reader = FrameReader::with_decoder(&stream[..], *decoder).expect("the preamble");
    let read = reader
        .next_frame()
        .map(|_| ())
        .expect_err("the reader refuses it too");
    assert_eq!(read.wire_error(), Some(&e), "the reader's refusal: {read}");
    assert_eq!((read.frame(), read.offset()), (1, 14), "{read}");
    match e.rule() {
        Rule::ZeroLength => return assert_eq!(prefix, 0, "{e}"),
        Rule::FrameTooLarge { len, limit } => {
            let want = (prefix as usize, LIMIT, true);
            return assert_eq!((len, limit, prefix > LIMIT), want, "{e}");
        }
        _ => {}
    }
    let whole = &bytes[..4 + prefix as usize];
    assert!(
        e.offset() <= whole.len(),
        "{e} is past the frame's {} bytes",
        whole.len()
    );
    assert_eq!(decoder.decode(whole).err(), Some(e), "not the frame's own");
    let followed = [whole, b"and more"].concat();
    assert_eq!(
        decoder.decode(&followed).err(),
        Some(e),
        "not the frame's own"
    );
    if let Ok(d) = dendro::replicate::wire::decode_payload(&whole[4..]) {
        assert!(
            matches!(e.rule(), Rule::KeysNotAscending | Rule::NotACanonicalUuid),
            "ours refused ({e}) what dendro read: {d:?}"
        );
    }
}

/// Delivers a stream in the chunk sizes it is given, cycling through them.
struct Chunked<'a> {
    bytes: &'a [u8],
    sizes: &'a [u8],
    next: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let size = self
            .sizes
            .get(self.next % self.sizes.len().max(1))
            .map_or(7, |&s| usize::from(s.max(1)));
        self.next += 1;
        let n = size.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

/// FrameReader on an arbitrary stream delivered in arbitrary chunk sizes:
/// the same frames and the same error as the whole buffer at once.
#[test]
fn reader_chunks() {
    check!()
        .with_type::<(Vec<u8>, Vec<u8>)>()
        .with_iterations(ITERATIONS)
        .for_each(|(body, sizes)| {
            let mut stream = b"dendro-repl\0\x01\x00".to_vec();
            stream.extend_from_slice(body);
            // The error by its sentence: `ReadError` has no `PartialEq`.
            let said = |(frames, error): (Vec<OwnedFrame>, Option<ReadError>)| {
                (frames, error.map(|e| e.to_string()))
            };
            let whole = said(read_all(&stream[..]));
            let chunked = said(read_all(Chunked {
                bytes: &stream,
                sizes,
                next: 0,
            }));
            assert_eq!(whole, chunked);
        });
}

/// A valid frame, every choice in it drawn from the fuzzer's bytes: one of
/// dendro's kinds through the shared generator and the one mapping to a
/// view, or now and then a kind this build does not know.
fn owned_frame(bytes: &[u8]) -> OwnedFrame {
    let mut g = Gen::from_bytes(bytes);
    if g.below(8) == 0 {
        let (kind, payload) = g.unknown();
        return OwnedFrame::Unknown { kind, payload };
    }
    with_view(&g.frame(), |view| OwnedFrame::from(view))
}

/// A `Rows` frame built row by row with `RowsBuilder`, into a buffer of
/// exactly its size and into one a byte short: the first writes the bytes
/// `emit` wrote; the second refuses the last row and finishes a frame of
/// the others.
fn rows_built_as_emitted(rows: &Rows<'_>, bytes: &[u8]) {
    let all: Vec<Row<'_>> = rows.rows.iter().collect();
    let build = |cap: usize| {
        let mut buf = vec![0xee; cap];
        let mut b = RowsBuilder::new(
            &mut buf[..],
            RowsHeader {
                source: rows.source,
                seq: rows.seq,
                index_state: rows.index_state,
            },
        )
        .expect("room for the head");
        let pushed = all.iter().take_while(|row| b.push(row).is_ok()).count();
        let n = b.finish().expect("finishes");
        buf.truncate(n);
        (buf, pushed)
    };
    assert_eq!(build(bytes.len()), (bytes.to_vec(), all.len()));
    if let Some((_, kept)) = all.split_last() {
        let (short, pushed) = build(bytes.len() - 1);
        assert_eq!(pushed, kept.len());
        let Ok(Status::Complete((Frame::Rows(r), used))) = dendro_wire_core::decode(&short) else {
            panic!("the rows that fit make a frame");
        };
        assert_eq!(used, short.len());
        assert_eq!(r.rows.iter().collect::<Vec<_>>(), kept);
    }
}

/// Encode then decode, for arbitrary owned frames: identity; a `Rows`
/// frame built with `RowsBuilder` is the same bytes.
#[test]
fn encode_decode() {
    check!()
        .with_iterations(ITERATIONS)
        .for_each(|choices: &[u8]| {
            let frame = owned_frame(choices);
            let mut bytes = Vec::new();
            frame.write_to(&mut bytes).expect("a valid frame encodes");
            let Ok(Status::Complete((view, used))) = dendro_wire_core::decode(&bytes) else {
                panic!("{frame:?} did not decode whole");
            };
            assert_eq!(used, bytes.len());
            assert_eq!(OwnedFrame::from(&view), frame);
            if let Frame::Rows(rows) = &view {
                rows_built_as_emitted(rows, &bytes);
            }
        });
}

/// `dendro-wire encode` then `dump --json`, as the tool does them: a frame's
/// JSON line parses back to the frame, and encodes to the same bytes.
#[test]
fn json_identity() {
    check!()
        .with_iterations(ITERATIONS)
        .for_each(|choices: &[u8]| {
            let frame = owned_frame(choices);
            let mut bytes = Vec::new();
            frame.write_to(&mut bytes).expect("encodes");
            let Ok(Status::Complete((view, _))) = dendro_wire_core::decode(&bytes) else {
                panic!("did not decode");
            };
            let line = serde_json::to_string(&OwnedFrame::from(&view)).expect("serializes");
            assert!(!line.contains('\n'), "one line per frame");
            let back: OwnedFrame = serde_json::from_str(&line).expect("parses back");
            assert_eq!(back, frame);
            let mut again = Vec::new();
            back.write_to(&mut again).expect("encodes");
            assert_eq!(again, bytes);
        });
}

/// Differential against dendro 0.6.1's decoder on arbitrary payloads: the
/// same frame, or both refuse, except where docs/PROTOCOL.md §8 makes us stricter.
#[test]
fn differential_dendro() {
    check!()
        .with_iterations(ITERATIONS)
        .for_each(|payload: &[u8]| {
            let mut frame = (payload.len() as u32).to_le_bytes().to_vec();
            frame.extend_from_slice(payload);
            let ours = dendro_wire_core::decode(&frame);
            let theirs = dendro::replicate::wire::decode_payload(payload);
            match (ours, theirs) {
                (Ok(Status::Complete((Frame::Unknown { .. }, _))), Err(_)) => {
                    // dendro's decode_payload refuses a kind it does not know;
                    // its reader skips it, as ours does.
                }
                (Ok(Status::Complete((view, _))), Ok(d)) => {
                    let mut ours = Vec::new();
                    OwnedFrame::from(&view)
                        .write_to(&mut ours)
                        .expect("encodes");
                    let mut theirs = Vec::new();
                    dendro::replicate::wire::encode_frame(&d, &mut theirs).expect("encodes");
                    assert_eq!(ours, theirs, "read differently");
                }
                (Err(e), Ok(_)) => assert!(
                    matches!(
                        e.rule(),
                        dendro_wire_core::Rule::KeysNotAscending
                            | dendro_wire_core::Rule::NotACanonicalUuid
                    ),
                    "only ours refused, on a rule dendro shares: {e}"
                ),
                (Ok(Status::Complete((f, _))), Err(e)) => {
                    panic!("dendro refused {f:?}, which ours read: {e}")
                }
                (Ok(Status::Incomplete { .. }), _) => {
                    unreachable!("the frame is whole")
                }
                (Err(_), Err(_)) => {}
            }
        });
}

/// One step of a subscriber's input.
#[derive(Debug, TypeGenerator)]
enum Step {
    Handshake(u8),
    Index(u8, bool, u8),
    Rows(u8, u8, u8),
    ClockOffset(u8),
    Reset,
    /// `Subscriber::allow_lost`, of 0 to 7 frames.
    AllowLost(u8),
}

/// The rules as a plain model, written from docs/PROTOCOL.md §5 and docs/PROTOCOL.md §8 without
/// looking at the state machine: per source, the held state, whether a Full
/// came, the last seq and the frames counted lost; and the most frames a
/// source may be counted lost (§8.17: a jump past it is a regression).
struct Model {
    sources: HashMap<u32, (u64, bool, Option<u64>, u64)>,
    allowance: u64,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            sources: HashMap::new(),
            allowance: u64::MAX,
        }
    }
}

fn state(s: u8) -> (u64, u64) {
    // 0 is "no index"; the others are distinct states.
    if s.is_multiple_of(3) {
        NO_INDEX_STATE
    } else {
        (u64::from(s % 3), 7)
    }
}

/// The subscriber state machine against the model, over arbitrary steps.
#[test]
fn subscriber_model() {
    check!()
        .with_type::<Vec<Step>>()
        .with_iterations(ITERATIONS)
        .for_each(|steps| {
            let mut sub = Subscriber::<4>::new();
            let mut model = Model::default();
            for step in steps {
                let frame = match *step {
                    Step::Handshake(s) => handshake(u32::from(s % 6)),
                    Step::Index(s, full, st) => Frame::Index(Index {
                        source: u32::from(s % 6),
                        stream: "x",
                        ts: 0,
                        kind: if full {
                            IndexKind::Full
                        } else {
                            IndexKind::Delta
                        },
                        state: state(st),
                        blob: &[],
                    }),
                    Step::Rows(s, seq, st) => Frame::Rows(Rows {
                        source: u32::from(s % 6),
                        seq: u64::from(seq % 8),
                        index_state: state(st),
                        rows: RowList::EMPTY,
                    }),
                    Step::ClockOffset(s) => Frame::ClockOffset(ClockOffset {
                        source: u32::from(s % 6),
                        ts: 0,
                        offset_ns: 0,
                    }),
                    Step::Reset => {
                        sub.reset();
                        model = Model::default();
                        continue;
                    }
                    Step::AllowLost(n) => {
                        sub.allow_lost(u64::from(n % 8));
                        model.allowance = u64::from(n % 8);
                        continue;
                    }
                };
                let got = sub.admit(&frame);
                let source = frame.source().expect("known kinds");
                let want = model.admit(&frame, source);
                match (got, want) {
                    (
                        Ok(dendro_wire_core::Admitted::Rows(v)),
                        Ok(Some((skip, lost, regression))),
                    ) => {
                        assert_eq!(
                            (v.skip.is_some(), v.lost, v.regression),
                            (skip, lost, regression),
                            "{step:?}"
                        );
                    }
                    (Ok(_), Ok(None)) => {}
                    (Err(e), Err(w)) => assert_eq!(e, w, "{step:?}"),
                    (got, want) => panic!("{step:?}: machine {got:?}, model {want:?}"),
                }
            }
        });
}

impl Model {
    /// `Ok(Some((skipped, lost, regression)))` for rows, `Ok(None)` for any
    /// other frame admitted, or the error.
    fn admit(
        &mut self,
        frame: &Frame<'_>,
        source: u32,
    ) -> Result<Option<(bool, u64, bool)>, ProtocolError> {
        if let Frame::Handshake(_) = frame {
            if self.sources.contains_key(&source) {
                return Err(ProtocolError::DuplicateHandshake { source });
            }
            if self.sources.len() == 4 {
                return Err(ProtocolError::TooManySources { limit: 4 });
            }
            self.sources.insert(source, (0, false, None, 0));
            return Ok(None);
        }
        let Some((held, full, last, counted)) = self.sources.get_mut(&source) else {
            return Err(ProtocolError::UnknownSource {
                source,
                kind: frame.kind(),
            });
        };
        match frame {
            Frame::Index(i) => {
                *held = i.state.0;
                *full |= i.kind == IndexKind::Full;
                Ok(None)
            }
            Frame::Rows(r) => {
                let (jump, regression) = match *last {
                    None => (0, false),
                    Some(l) if r.seq > l => (r.seq - l - 1, false),
                    Some(_) => (0, true),
                };
                *last = Some(r.seq);
                let (lost, regression) = match counted.checked_add(jump) {
                    Some(total) if total <= self.allowance => {
                        *counted = total;
                        (jump, regression)
                    }
                    _ => (0, true),
                };
                let declared = r.index_state.0;
                let skip = (declared != 0 && !*full) || declared != *held;
                Ok(Some((skip, lost, regression)))
            }
            _ => Ok(None),
        }
    }
}

/// A PROXY protocol header's parse (what a collector reads first from a
/// load balancer) on arbitrary bytes: never panics; a header it accepts
/// takes at least one byte and no more than it was given, and is the same
/// header with nothing after it; it asks for more only short of the most a
/// header may take; and each cut of an accepted header short of its end
/// asks for more or is refused, never accepted as something else.
#[test]
fn proxy_header() {
    check!()
        .with_iterations(ITERATIONS)
        .for_each(|bytes: &[u8]| match parse_header(bytes) {
            Ok(Status::Complete((from, used))) => {
                assert!(used > 0 && used <= bytes.len() && used <= MAX_HEADER);
                assert_eq!(
                    parse_header(&bytes[..used]),
                    Ok(Status::Complete((from, used)))
                );
                for cut in 0..used {
                    assert!(
                        !matches!(parse_header(&bytes[..cut]), Ok(Status::Complete(_))),
                        "a header accepted at {cut} of its {used} bytes"
                    );
                }
            }
            Ok(Status::Incomplete { needed }) => {
                assert!(needed > 0 && bytes.len() < MAX_HEADER);
            }
            Err(e) => {
                let _ = (e.name(), e.to_string());
            }
        });
}

/// The PROXY header's parse on arbitrary bytes arriving in arbitrary
/// pieces, judged on all that has arrived after each, as a server reads
/// one: it never panics, never takes more than has arrived, and its first
/// verdict that is not "more" is the verdict on the whole buffer at once
/// (or, if every piece is in and it still wants more, so does the whole).
/// The bytes begin, as `start` picks, with nothing or with the start of a
/// header, so that most inputs reach past the signature.
#[test]
fn proxy_header_chunks() {
    check!()
        .with_type::<((u8, u8), Vec<u8>, Vec<u8>)>()
        .with_iterations(ITERATIONS)
        .for_each(|((start, shape), body, sizes)| {
            let signature = b"\r\n\r\n\0\r\nQUIT\n";
            let mut bytes = match start % 6 {
                0 => Vec::new(),
                1 => b"PROXY ".to_vec(),
                2 => b"PROXY TCP4 ".to_vec(),
                3 => b"PROXY TCP6 ".to_vec(),
                4 => signature.to_vec(),
                // A version 2 head with a version, command and family of
                // `shape`'s bits and a length of at most 63.
                _ => [
                    signature.as_slice(),
                    &[0x20 | (shape & 0x11), (shape & 0x33) ^ 0x10, 0, shape >> 2],
                ]
                .concat(),
            };
            bytes.extend_from_slice(body);
            let whole = parse_header(&bytes);
            // Pieces of 1 to 255 bytes, of 7 if none are given.
            let mut sizes = sizes.iter().map(|&s| usize::from(s.max(1))).cycle();
            let (mut arrived, mut chunked) = (0, parse_header(&[]));
            while matches!(chunked, Ok(Status::Incomplete { .. })) && arrived < bytes.len() {
                arrived = (arrived + sizes.next().unwrap_or(7)).min(bytes.len());
                chunked = parse_header(&bytes[..arrived]);
                if let Ok(Status::Complete((_, used))) = chunked {
                    assert!(used > 0 && used <= arrived, "took {used} of {arrived}");
                }
            }
            assert_eq!(chunked, whole, "judged at {arrived} of {}", bytes.len());
        });
}

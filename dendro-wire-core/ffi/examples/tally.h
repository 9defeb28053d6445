/*
 * tally.h: the subscriber's rules over a stream held whole, as
 * `dendro-wire check --json` applies them, and what it counts, printed as
 * its line: for check.c and the conformance suite's C adapter.
 */
#ifndef TALLY_H
#define TALLY_H

#include <inttypes.h>
#include <stdio.h>

#include "dendro_wire.h"

/* What `check --json` counts, in its order. */
struct tally {
  uint64_t frames, sources, index_entries, rows_applied, rows_skipped, segments, clock_offsets,
      source_updates, unknown_skipped, gaps, frames_lost, seq_regressions;
};

static void count(struct tally *t, const dw_frame *f, const dw_admitted *v) {
  t->frames++;
  switch (v->kind) {
    case DW_ADMITTED_OPENED: t->sources++; break;
    case DW_ADMITTED_INDEX: t->index_entries++; break;
    case DW_ADMITTED_ROWS:
      if (v->skip == DW_SKIP_NONE) t->rows_applied += f->body.rows.count;
      else t->rows_skipped += f->body.rows.count;
      if (v->lost > 0) {
        t->gaps++;
        t->frames_lost += v->lost;
      }
      t->seq_regressions += v->regression;
      break;
    case DW_ADMITTED_APPLY:
      if (f->kind == DW_FRAME_SEGMENT) t->segments++;
      if (f->kind == DW_FRAME_CLOCK_OFFSET) t->clock_offsets++;
      if (f->kind == DW_FRAME_SOURCE_UPDATE) t->source_updates++;
      break;
    case DW_ADMITTED_UNKNOWN: t->unknown_skipped++; break;
  }
}

/* The counts as the object `check --json` prints, with no newline. */
static void put_tally(const struct tally *t) {
  printf("{\"frames\":%" PRIu64 ",\"sources\":%" PRIu64 ",\"index_entries\":%" PRIu64
         ",\"rows_applied\":%" PRIu64 ",\"rows_skipped\":%" PRIu64 ",\"segments\":%" PRIu64
         ",\"clock_offsets\":%" PRIu64 ",\"source_updates\":%" PRIu64
         ",\"unknown_skipped\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"frames_lost\":%" PRIu64
         ",\"seq_regressions\":%" PRIu64 "}",
         t->frames, t->sources, t->index_entries, t->rows_applied, t->rows_skipped, t->segments,
         t->clock_offsets, t->source_updates, t->unknown_skipped, t->gaps, t->frames_lost,
         t->seq_regressions);
}

/* Where a stream stopped: the frame being read (from 1; 0 for the
 * preamble) and the stream offset it starts at. */
struct stopped {
  uint64_t frame;
  size_t offset;
};

/* The stream in `buf` (all `len` bytes of it): each frame decoded in
 * place, admitted by `sub`, handed to `each` (when not NULL) and counted
 * into `t`. DW_RESULT_OK at a clean end; else the failure, described in
 * `err`, with where in `at`. */
static dw_result check_stream(const uint8_t *buf, size_t len, dw_subscriber *sub,
                              struct tally *t, void (*each)(const dw_frame *),
                              struct stopped *at, dw_error *err) {
  size_t used, needed, offset = 0;
  uint64_t number = 0;
  dw_result r = dw_check_preamble(buf, len, &used, &needed, err);
  if (r == DW_RESULT_OK) offset = used;
  while (r == DW_RESULT_OK && offset < len) {
    dw_frame f;
    dw_admitted v;
    number++;
    r = dw_decode(buf + offset, len - offset, &f, &used, &needed, err);
    if (r == DW_RESULT_OK) r = dw_subscriber_admit(sub, &f, &v, err);
    if (r == DW_RESULT_OK) {
      if (each) each(&f);
      count(t, &f, &v);
      offset += used;
    }
  }
  if (r == DW_RESULT_INCOMPLETE) r = dw_stream_end(buf + offset, len - offset, offset > 0, err);
  at->frame = offset > 0 ? number : 0;
  at->offset = offset;
  return r;
}

#endif /* TALLY_H */

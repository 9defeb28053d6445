/*
 * frame_json.h: a decoded frame printed as one line of the JSON Lines form
 * `dendro-wire dump --json` prints (docs/PROTOCOL.md §10), for dump.c and
 * the conformance suite's C adapter.
 */
#ifndef FRAME_JSON_H
#define FRAME_JSON_H

#include <inttypes.h>
#include <stdio.h>

#include "dendro_wire.h"

static void put_json_str(const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  putchar('"');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '"': fputs("\\\"", stdout); break;
      case '\\': fputs("\\\\", stdout); break;
      case '\b': fputs("\\b", stdout); break;
      case '\f': fputs("\\f", stdout); break;
      case '\n': fputs("\\n", stdout); break;
      case '\r': fputs("\\r", stdout); break;
      case '\t': fputs("\\t", stdout); break;
      default:
        if (c < 0x20) {
          printf("\\u00%c%c", hex[c >> 4], hex[c & 15]);
        } else {
          putchar(c);
        }
    }
  }
  putchar('"');
}

static void put_str(dw_str s) { put_json_str(s.ptr, s.len); }

static void put_hex(dw_bytes b) {
  static const char hex[] = "0123456789abcdef";
  putchar('"');
  for (size_t i = 0; i < b.len; i++) {
    putchar(hex[b.ptr[i] >> 4]);
    putchar(hex[b.ptr[i] & 15]);
  }
  putchar('"');
}

/* A map as a JSON object; 0, or the result of a cursor that broke. */
static dw_result put_map(dw_map map) {
  dw_str key, value;
  dw_result r;
  putchar('{');
  for (int first = 1; (r = dw_map_next(&map, &key, &value, NULL)) == DW_RESULT_OK; first = 0) {
    if (!first) putchar(',');
    put_str(key);
    putchar(':');
    put_str(value);
  }
  putchar('}');
  return r == DW_RESULT_DONE ? DW_RESULT_OK : r;
}

static void put_state(const uint64_t state[2]) {
  printf("[%" PRIu64 ",%" PRIu64 "]", state[0], state[1]);
}

/* One frame as one JSON line. */
static dw_result put_frame(const dw_frame *f) {
  dw_result r = DW_RESULT_OK;
  switch (f->kind) {
    case DW_FRAME_HANDSHAKE: {
      const dw_handshake *h = &f->body.handshake;
      printf("{\"frame\":\"handshake\",\"source\":%" PRIu32 ",\"uuid\":", h->source);
      if (h->has_uuid) put_str(h->uuid); else fputs("null", stdout);
      fputs(",\"labels\":", stdout);
      if ((r = put_map(h->labels)) != DW_RESULT_OK) return r;
      fputs(",\"metadata\":", stdout);
      if ((r = put_map(h->metadata)) != DW_RESULT_OK) return r;
      printf(",\"clock_anchor_wall_ns\":%" PRId64 ",\"complete\":%s}", h->clock_anchor_wall_ns,
             h->complete ? "true" : "false");
      break;
    }
    case DW_FRAME_INDEX: {
      const dw_index *i = &f->body.index;
      printf("{\"frame\":\"index\",\"source\":%" PRIu32 ",\"stream\":", i->source);
      put_str(i->stream);
      printf(",\"ts\":%" PRId64 ",\"kind\":\"%s\",\"state\":", i->ts,
             i->kind == DW_INDEX_FULL ? "full" : "delta");
      put_state(i->state);
      fputs(",\"blob\":", stdout);
      put_hex(i->blob);
      putchar('}');
      break;
    }
    case DW_FRAME_ROWS: {
      const dw_rows *rows = &f->body.rows;
      printf("{\"frame\":\"rows\",\"source\":%" PRIu32 ",\"seq\":%" PRIu64 ",\"index_state\":",
             rows->source, rows->seq);
      put_state(rows->index_state);
      fputs(",\"rows\":[", stdout);
      dw_row_cursor cursor = rows->rows;
      dw_row row;
      for (int first = 1; (r = dw_rows_next(&cursor, &row, NULL)) == DW_RESULT_OK; first = 0) {
        fputs(first ? "{\"stream\":" : ",{\"stream\":", stdout);
        put_str(row.stream);
        printf(",\"ts\":%" PRId64 ",\"wall_offset\":%" PRId64 ",\"row\":", row.ts,
               row.wall_offset);
        put_hex(row.row);
        putchar('}');
      }
      if (r != DW_RESULT_DONE) return r;
      fputs("]}", stdout);
      break;
    }
    case DW_FRAME_SEGMENT: {
      const dw_segment *s = &f->body.segment;
      printf("{\"frame\":\"segment\",\"source\":%" PRIu32 ",\"stream\":", s->source);
      put_str(s->stream);
      printf(",\"rows\":%" PRIu64 ",\"first_ts\":%" PRId64 ",\"last_ts\":%" PRId64 ",\"bytes\":",
             s->rows, s->first_ts, s->last_ts);
      put_hex(s->bytes);
      fputs(",\"caller_index\":", stdout);
      if (s->has_caller_index) put_hex(s->caller_index); else fputs("null", stdout);
      putchar('}');
      break;
    }
    case DW_FRAME_CLOCK_OFFSET: {
      const dw_clock_offset *c = &f->body.clock_offset;
      printf("{\"frame\":\"clock_offset\",\"source\":%" PRIu32 ",\"ts\":%" PRId64
             ",\"offset_ns\":%" PRId64 "}",
             c->source, c->ts, c->offset_ns);
      break;
    }
    case DW_FRAME_SOURCE_UPDATE: {
      const dw_source_update *u = &f->body.source_update;
      printf("{\"frame\":\"source_update\",\"source\":%" PRIu32 ",\"ts\":%" PRId64 ",\"labels\":",
             u->source, u->ts);
      if ((r = put_map(u->labels)) != DW_RESULT_OK) return r;
      fputs(",\"metadata\":", stdout);
      if ((r = put_map(u->metadata)) != DW_RESULT_OK) return r;
      putchar('}');
      break;
    }
    default: {
      const dw_unknown *u = &f->body.unknown;
      printf("{\"frame\":\"unknown\",\"kind\":%u,\"payload\":", (unsigned)u->kind);
      put_hex(u->payload);
      putchar('}');
    }
  }
  putchar('\n');
  return DW_RESULT_OK;
}

#endif /* FRAME_JSON_H */

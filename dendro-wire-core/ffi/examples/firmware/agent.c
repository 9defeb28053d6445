/*
 * A firmware agent in C over the C API, the Rust agent's workload
 * (xtask/firmware/src/bin/agent) call for call: two sources (one with an
 * index of channel slots), 300 intervals of rows and slot changes, one
 * disconnect and reconnect, each connection's stream written to the host
 * as connection-N.dwr. The link loses the Rows frames the command line's
 * gaps=G says, and the program prints, per connection, what
 * `dendro-wire check --json` must then say. No libc, no heap: the
 * publisher, its sources and the frame buffer are static.
 *
 * cargo xtask firmware builds it with arm-none-eabi-gcc against the
 * staticlib for thumbv7m-none-eabi and for thumbv6m-none-eabi, runs each
 * under qemu-system-arm (a Cortex-M3 and a Cortex-M0) and compares.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dendro_wire.h"
#include "semihost.h"

#define FRAME_BUFFER 512
#define SOURCES 2
#define ADC 0
#define POWER 1
#define INTERVALS 300u
#define INTERVAL_NS 10000000LL
#define START_NS 1764672000000000000LL
#define DISCONNECT 150u
#define RECONNECT 156u
#define FULL_EVERY 50u
#define MAX_GAPS 6u

extern uint32_t _data, _edata, _data_load, _bss, _ebss, _stack_top;

/* Exactly what a publisher of SOURCES sources takes on this target. */
static DW_PUBLISHER_STORAGE(SOURCES) publisher_storage;
/* Each source's storage, sized at compile time for the most it is given
 * in an interval, as the Rust agent's SourceDecl::sizing sizes its own:
 * the ADC's three channels of 8 bytes and its four channel slots (up to 9
 * bytes, key and value) one changed at a time; the power source's two
 * readings of 2. The handshakes: a uuid, two labels and the encoder. */
#define ADC_HANDSHAKE DW_HANDSHAKE_BYTES(1, DW_MAP_BYTES(2, 23), DW_MAP_BYTES(1, 22))
#define POWER_HANDSHAKE DW_HANDSHAKE_BYTES(1, DW_MAP_BYTES(2, 25), DW_MAP_BYTES(1, 22))
#define ADC_SIZING ADC_HANDSHAKE, 3, 21, 7, 7, DW_INDEX(12), 8, 3, 4, 9, 1
#define POWER_SIZING POWER_HANDSHAKE, 2, 20, 10, 10, DW_NO_INDEX, 2, 2, 0, 0, 0
#define SOURCE_STORAGE(sizing) DW_SOURCE_STORAGE(sizing)
#define SOURCE_FRAME_BUFFER(sizing) DW_SOURCE_FRAME_BUFFER(sizing)
static uint8_t adc_storage[SOURCE_STORAGE(ADC_SIZING)] __attribute__((aligned(8)));
static uint8_t power_storage[SOURCE_STORAGE(POWER_SIZING)] __attribute__((aligned(8)));
static uint8_t *const source_storage[SOURCES] = {adc_storage, power_storage};
static const size_t source_bytes[SOURCES] = {sizeof adc_storage, sizeof power_storage};
_Static_assert(SOURCE_FRAME_BUFFER(ADC_SIZING) <= FRAME_BUFFER &&
                   SOURCE_FRAME_BUFFER(POWER_SIZING) <= FRAME_BUFFER,
               "the frame buffer holds every frame of both sources");
static uint8_t frame[FRAME_BUFFER];

/* ---- the console: text, numbers, key=value fields ---- */

static char line[256];
static size_t line_len;

static void put(const char *s) {
  while (*s && line_len + 1 < sizeof line) line[line_len++] = *s++;
}

static void num(uint32_t n) {
  char digits[11];
  int i = 0;
  do {
    digits[i++] = (char)('0' + n % 10);
    n /= 10;
  } while (n);
  while (i && line_len + 1 < sizeof line) line[line_len++] = digits[--i];
}

static void field(const char *key, uint32_t value) {
  put(" ");
  put(key);
  put("=");
  num(value);
}

static void end_line(void) {
  put("\n");
  line[line_len] = 0;
  host_print(line);
  line_len = 0;
}

/* ---- the stack's high-water mark ---- */

/* Every word between the end of .bss and the stack pointer (less a margin
 * for this function's own frame) is painted; a word the program ever used
 * no longer holds the paint. */
#define PAINT 0xCCCCCCCCu

static void paint(void) {
  uint32_t *volatile at = &_ebss;
  uint32_t *sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (; at < sp - 16; at++) *at = PAINT;
}

/* The bytes of stack used since the last paint. */
static uint32_t stack_peak(void) {
  const uint32_t *at = &_ebss;
  while (at < &_stack_top && *at == PAINT) at++;
  return (uint32_t)((const uint8_t *)&_stack_top - (const uint8_t *)at);
}

/* ---- the declarations ---- */

#define ENCODER "sensor-7-raw-v1"

static const dw_pair adc_labels[] = {{DW_STR("device"), DW_STR("sensor-7")},
                                     {DW_STR("source"), DW_STR("adc")}};
static const dw_pair power_labels[] = {{DW_STR("device"), DW_STR("sensor-7")},
                                       {DW_STR("source"), DW_STR("power")}};
static const dw_pair metadata[] = {{DW_STR("encoder"), DW_STR(ENCODER)}};
static const dw_str adc_streams[] = {DW_STR("adc/ch0"), DW_STR("adc/ch1"), DW_STR("adc/ch2")};
static const dw_str power_streams[] = {DW_STR("power/temp"), DW_STR("power/vbat")};

static const dw_source_decl declared[SOURCES] = {
    {DW_STR("6f1c2e3d-4b5a-4697-8877-665544332211"), adc_labels, 2, metadata, 1, START_NS, 0,
     adc_streams, 3, DW_STR("adc/channels")},
    {DW_STR("0b5e2c1a-7d43-4f6e-9a10-3c2b1d0e4f5b"), power_labels, 2, metadata, 1, START_NS, 0,
     power_streams, 2, DW_NO_STR},
};

static const char *const channels[3] = {"ch0", "ch1", "ch2"};
static const char *const gains[4] = {"gain=1", "gain=2", "gain=4", "gain=8"};

/* ---- the link: one host file per connection ---- */

struct expected {
  uint32_t frames, sources, index_entries, rows_applied, gaps, frames_lost;
};

static struct {
  int32_t file; /* -1: no connection */
  uint32_t connections;
  struct expected e;
  int32_t losing; /* the source whose Rows frame is lost now, or -1 */
  uint32_t lost_run[SOURCES];
  uint32_t gaps, frames_lost, rows_lost, frames_offline, unreadable;
  bool host_failed;
} link = {.file = -1, .losing = -1};

static bool connect(void) {
  static char name[] = "connection-?.dwr";
  if (link.connections >= 10) return false;
  name[11] = (char)('0' + link.connections);
  link.file = host_create(name, sizeof name - 1);
  if (link.file < 0) return false;
  /* The library's own preamble: the magic and its protocol version. */
  link.host_failed |= !host_write(link.file, dw_preamble, sizeof dw_preamble);
  link.e = (struct expected){0};
  link.lost_run[0] = link.lost_run[1] = 0;
  return true;
}

static void disconnect(void) {
  if (link.file < 0) return;
  link.host_failed |= !host_close(link.file);
  link.file = -1;
  put("connection ");
  num(link.connections);
  field("frames", link.e.frames);
  field("sources", link.e.sources);
  field("index_entries", link.e.index_entries);
  field("rows_applied", link.e.rows_applied);
  field("rows_skipped", 0);
  field("segments", 0);
  field("clock_offsets", 0);
  field("source_updates", 0);
  field("unknown_skipped", 0);
  field("gaps", link.e.gaps);
  field("frames_lost", link.e.frames_lost);
  field("seq_regressions", 0);
  end_line();
  link.connections++;
}

static void transmit(const uint8_t *bytes, const dw_transmit *t) {
  if (link.file < 0) {
    link.frames_offline++;
    return;
  }
  switch (t->kind) {
    case DW_FRAME_HANDSHAKE: link.e.sources++; break;
    case DW_FRAME_INDEX: link.e.index_entries++; break;
    case DW_FRAME_ROWS: {
      if (t->source >= SOURCES) {
        link.unreadable++;
        return;
      }
      if (link.losing == (int32_t)t->source) {
        link.lost_run[t->source]++;
        link.rows_lost += t->rows;
        return;
      }
      /* The frame after a loss is where the subscriber sees it. */
      if (link.lost_run[t->source] > 0) {
        link.e.gaps++;
        link.e.frames_lost += link.lost_run[t->source];
        link.gaps++;
        link.frames_lost += link.lost_run[t->source];
        link.lost_run[t->source] = 0;
      }
      link.e.rows_applied += t->rows;
      break;
    }
    default: break;
  }
  link.e.frames++;
  link.host_failed |= !host_write(link.file, bytes, t->len);
}

/* ---- the workload ---- */

/* Whose Rows frame the link loses this interval: gap k starts at interval
 * 17 + 53k and loses one frame (k even, the ADC's) or two (k odd, the
 * power source's). */
static int32_t lost_in(uint32_t interval, uint32_t gaps) {
  for (uint32_t k = 0; k < gaps; k++) {
    uint32_t first = 17 + 53 * k;
    if (interval >= first && interval < first + 1 + k % 2) return (int32_t)(k % 2);
  }
  return -1;
}

static size_t length(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

static uint32_t refused;

static void check(dw_result r) { refused += r != DW_RESULT_OK; }

static void set_slot(dw_publisher *p, uint32_t source, const char *key, const char *value) {
  check(dw_publisher_set_slot(p, source, (const uint8_t *)key, length(key),
                              (const uint8_t *)value, length(value), NULL));
}

static void observe(dw_publisher *p, uint32_t source, uint32_t stream, int64_t ts,
                    int64_t wall_offset, const void *row, size_t len) {
  check(dw_publisher_observe(p, source, stream, ts, wall_offset, row, len, NULL));
}

/* One interval's slot changes and rows; how many rows. Out of line, so
 * that its rows sit in a frame of its own in the loop, not in the one the
 * sources are declared from. */
__attribute__((noinline)) static uint32_t workload(uint32_t i, dw_publisher *p,
                                                  const uint32_t ids[SOURCES]) {
  if (i % 11 == 5) {
    uint32_t step = i / 11;
    set_slot(p, ids[ADC], channels[step % 3], gains[step % 4]);
  }
  if (i % 60 == 20) set_slot(p, ids[ADC], "aux", "on");
  if (i % 60 == 45) {
    check(dw_publisher_remove_slot(p, ids[ADC], (const uint8_t *)"aux", 3, NULL));
  }
  int64_t ts = START_NS + (int64_t)i * INTERVAL_NS;
  uint32_t observed = 0;
  if (i % 7 != 3) {
    for (uint32_t ch = 0; ch < 3; ch++) {
      if (ch < 2 || i % 3 == 0) {
        int32_t value = (int32_t)(i * 37 + ch * 1000) - 2000;
        uint8_t row[8];
        for (int b = 0; b < 4; b++) {
          row[b] = (uint8_t)((uint32_t)value >> (8 * b));
          row[4 + b] = (uint8_t)(i >> (8 * b));
        }
        observe(p, ids[ADC], ch, ts + (int64_t)ch * 1000, 12, row, sizeof row);
        observed++;
      }
    }
  }
  if (i % 2 == 0) {
    uint16_t millivolts = (uint16_t)(3300 - i % 100);
    uint8_t row[2] = {(uint8_t)millivolts, (uint8_t)(millivolts >> 8)};
    observe(p, ids[POWER], 1, ts + 5000, -40, row, sizeof row);
    observed++;
  }
  if (i % 5 == 0) {
    int16_t decidegrees = (int16_t)(215 + i % 13);
    uint8_t row[2] = {(uint8_t)decidegrees, (uint8_t)((uint16_t)decidegrees >> 8)};
    observe(p, ids[POWER], 0, ts + 6000, -40, row, sizeof row);
    observed++;
  }
  return observed;
}

/* End the interval and send every frame due; false if a poll failed. */
static bool end_interval(dw_publisher *p) {
  if (dw_publisher_end_interval(p, NULL) != DW_RESULT_OK) return false;
  for (;;) {
    dw_transmit t;
    dw_result r = dw_publisher_poll(p, frame, sizeof frame, &t, NULL);
    if (r == DW_RESULT_DONE) return true;
    if (r != DW_RESULT_OK) return false;
    transmit(frame, &t);
  }
}

/* The number after "gaps=" on the command line: 0 if none, -1 if bad. */
static int32_t told_gaps(void) {
  static char args[64];
  if (host_command_line(args, sizeof args) != 0) return 0;
  for (size_t i = 0; args[i]; i++) {
    if (args[i] == 'g' && args[i + 1] == 'a' && args[i + 2] == 'p' && args[i + 3] == 's' &&
        args[i + 4] == '=') {
      int32_t n = 0;
      size_t j = i + 5;
      if (args[j] < '0' || args[j] > '9') return -1;
      for (; args[j] >= '0' && args[j] <= '9'; j++) n = n * 10 + (args[j] - '0');
      return n;
    }
  }
  return 0;
}

/* Print what the run came to; whether the publisher refused nothing. Out
 * of line, so that its dw_stats is not in the frame the loop runs in. */
__attribute__((noinline)) static bool report(dw_publisher *p, uint32_t gaps, uint32_t observed,
                                             uint32_t stack_declaring, uint32_t stack_looping) {
  dw_stats st;
  check(dw_publisher_stats(p, &st, NULL));
  put("agent");
  field("intervals", INTERVALS);
  field("connections", link.connections);
  field("told_gaps", gaps);
  field("gaps", link.gaps);
  field("frames_lost", link.frames_lost);
  field("rows_observed", observed);
  field("rows_lost", link.rows_lost);
  field("frames_offline", link.frames_offline);
  field("unreadable", link.unreadable);
  field("refused", refused);
  field("rows_refused", (uint32_t)st.rows_refused);
  field("slots_refused", (uint32_t)st.slot_changes_refused);
  field("frames_unsent", (uint32_t)st.frames_unsent);
  field("publisher_state", (uint32_t)dw_publisher_size(SOURCES));
  end_line();
  put("footprint");
  field("stack_declaring", stack_declaring);
  field("stack_looping", stack_looping);
  end_line();
  return refused == 0 && st.rows_refused == 0 && st.slot_changes_refused == 0 &&
         st.frames_unsent == 0;
}

static bool run(uint32_t gaps) {
  dw_publisher *p;
  const dw_publisher_config config = {FULL_EVERY, FRAME_BUFFER};
  paint();
  if (sizeof publisher_storage != dw_publisher_size(SOURCES) ||
      DW_SUBSCRIBER_SIZE(SOURCES) != dw_subscriber_size(SOURCES)) {
    put("agent: the header's sizes are not this build's");
    end_line();
    return false;
  }
  if (dw_publisher_init(publisher_storage.bytes, sizeof publisher_storage, SOURCES, &config, &p,
                        NULL) != DW_RESULT_OK) {
    put("agent: the publisher does not fit its storage");
    end_line();
    return false;
  }
  uint32_t ids[SOURCES];
  for (int s = 0; s < SOURCES; s++) {
    dw_result r =
        dw_publisher_add_source(p, &declared[s], source_storage[s], source_bytes[s], &ids[s], NULL);
    if (r != DW_RESULT_OK) {
      put("agent: the declarations do not fit this build");
      end_line();
      return false;
    }
  }
  uint32_t stack_declaring = stack_peak();
  paint();
  uint32_t observed = 0;
  bool polled = true;
  for (int ch = 0; ch < 3; ch++) set_slot(p, ids[ADC], channels[ch], gains[0]);
  for (uint32_t i = 0; i < INTERVALS; i++) {
    if (i == 0 || i == RECONNECT) {
      if (!connect()) {
        put("agent: the host would not take connection-N.dwr");
        end_line();
        return false;
      }
      check(dw_publisher_connected(p, NULL));
    }
    if (i == DISCONNECT) {
      disconnect();
      check(dw_publisher_disconnected(p, NULL));
    }
    observed += workload(i, p, ids);
    link.losing = lost_in(i, gaps);
    polled &= end_interval(p);
  }
  uint32_t stack_looping = stack_peak();
  disconnect();
  bool clean = report(p, gaps, observed, stack_declaring, stack_looping) && polled;
  return clean && link.unreadable == 0 && link.frames_offline == 0 && !link.host_failed &&
         link.gaps == gaps && dw_publisher_release(p, NULL) == DW_RESULT_OK;
}

int main(void) {
  int32_t gaps = told_gaps();
  if (gaps < 0 || (uint32_t)gaps > MAX_GAPS) {
    put("agent: gaps= takes a whole number up to 6");
    end_line();
    return 1;
  }
  return run((uint32_t)gaps) ? 0 : 1;
}

/* ---- the start: the vector table, .data and .bss, then main ---- */

void reset(void) {
  uint32_t *from = &_data_load;
  for (uint32_t *to = &_data; to < &_edata;) *to++ = *from++;
  for (uint32_t *to = &_bss; to < &_ebss;) *to++ = 0;
  host_exit(main() == 0);
}

static void fault(void) {
  host_print("agent: a fault\n");
  host_exit(0);
}

__attribute__((section(".vectors"), used)) static const void *const vectors[16] = {
    &_stack_top, (void *)reset, (void *)fault, (void *)fault, (void *)fault,
    (void *)fault, (void *)fault, 0, 0, 0, 0, (void *)fault, (void *)fault, 0,
    (void *)fault, (void *)fault,
};

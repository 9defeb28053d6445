-- Wireshark dissector for the dendro replication wire protocol, version 1
-- (docs/PROTOCOL.md: §2 framing, §3 primitives, §4 frames, §8 the stricter
-- rules this project checks, §9 the index blob its publisher writes).
--
-- Registered as "dendro" on a TCP port (preference dendro.port, 7070 by
-- default: the port this project's documentation runs `dendro-wire listen`
-- on), and as a heuristic dissector on TCP that recognises the preamble,
-- "dendro-repl\0" then the u16 version 1. Frames are reassembled across TCP
-- segments.
--
-- Every read is preceded by a length check, so hostile bytes end in an
-- expert info, never in a Lua error. See README.md beside this file.

local MAGIC = "dendro-repl\0"
local PREAMBLE = 14
local MAX_FRAME = 64 * 1024 * 1024
local DEFAULT_PORT = 7070

local dendro = Proto("dendro", "dendro replication")

local KINDS = {
    [1] = "Handshake",
    [2] = "Index",
    [3] = "Rows",
    [4] = "Segment",
    [5] = "ClockOffset",
    [6] = "SourceUpdate",
}
local BOOL = { [0] = "false", [1] = "true" }
local PRESENCE = { [0] = "absent", [1] = "present" }
local INDEX_KIND = { [0] = "full", [1] = "delta" }

local f = dendro.fields
local function field(name, ...)
    f[name] = ...
end
-- The preamble.
field("magic", ProtoField.string("dendro.magic", "Magic"))
field("version", ProtoField.uint16("dendro.version", "Version", base.DEC))
-- Every frame.
field("len", ProtoField.uint32("dendro.len", "Length", base.DEC))
field("kind", ProtoField.uint8("dendro.kind", "Kind", base.DEC, KINDS))
field("source", ProtoField.uint32("dendro.source", "Source", base.DEC))
-- Primitives shared by several frames.
field("map", ProtoField.uint32("dendro.map.count", "Entries", base.DEC))
field("key", ProtoField.string("dendro.map.key", "Key"))
field("value", ProtoField.string("dendro.map.value", "Value"))
-- Handshake (1).
field("uuid_present", ProtoField.uint8("dendro.uuid.present", "Uuid", base.DEC, PRESENCE))
field("uuid", ProtoField.string("dendro.uuid", "Uuid"))
field("labels", ProtoField.uint32("dendro.labels", "Labels", base.DEC))
field("metadata", ProtoField.uint32("dendro.metadata", "Metadata", base.DEC))
field("anchor", ProtoField.int64("dendro.clock_anchor_wall_ns", "Clock anchor (wall ns)", base.DEC))
field("complete", ProtoField.uint8("dendro.complete", "Complete", base.DEC, BOOL))
-- Index (2).
field("index_stream", ProtoField.string("dendro.index.stream", "Stream"))
field("index_ts", ProtoField.int64("dendro.index.ts", "Ts", base.DEC))
field("index_kind", ProtoField.uint8("dendro.index.kind", "Kind", base.DEC, INDEX_KIND))
field("state0", ProtoField.uint64("dendro.index.state0", "State.0", base.DEC))
field("state1", ProtoField.uint64("dendro.index.state1", "State.1", base.DEC))
field("blob_len", ProtoField.uint32("dendro.index.blob_len", "Blob length", base.DEC))
field("blob", ProtoField.bytes("dendro.index.blob", "Blob"))
field("slot_key", ProtoField.string("dendro.slot.key", "Slot key"))
field("slot_value", ProtoField.string("dendro.slot.value", "Slot value"))
field("slot_present", ProtoField.uint8("dendro.slot.present", "Present", base.DEC, BOOL))
-- Rows (3).
field("seq", ProtoField.uint64("dendro.seq", "Seq", base.DEC))
field("istate0", ProtoField.uint64("dendro.index_state0", "Index state.0", base.DEC))
field("istate1", ProtoField.uint64("dendro.index_state1", "Index state.1", base.DEC))
field("rows", ProtoField.uint32("dendro.rows", "Rows", base.DEC))
field("row_stream", ProtoField.string("dendro.row.stream", "Stream"))
field("row_ts", ProtoField.int64("dendro.row.ts", "Ts", base.DEC))
field("row_wall", ProtoField.int64("dendro.row.wall_offset", "Wall offset", base.DEC))
field("row_len", ProtoField.uint32("dendro.row.len", "Row length", base.DEC))
field("row", ProtoField.bytes("dendro.row.data", "Row"))
field("prev_seq", ProtoField.uint64("dendro.seq.previous", "Previous seq of this source", base.DEC))
field("lost", ProtoField.uint64("dendro.seq.lost", "Frames lost before this one", base.DEC))
field("regression", ProtoField.uint64("dendro.seq.regression", "Seq regression: the source's previous seq", base.DEC))
-- Segment (4).
field("seg_stream", ProtoField.string("dendro.segment.stream", "Stream"))
field("seg_rows", ProtoField.uint64("dendro.segment.rows", "Rows", base.DEC))
field("seg_first", ProtoField.int64("dendro.segment.first_ts", "First ts", base.DEC))
field("seg_last", ProtoField.int64("dendro.segment.last_ts", "Last ts", base.DEC))
field("seg_len", ProtoField.uint32("dendro.segment.bytes_len", "Bytes length", base.DEC))
field("seg_bytes", ProtoField.bytes("dendro.segment.bytes", "Bytes"))
field("ci_present", ProtoField.uint8("dendro.segment.caller_index.present", "Caller index", base.DEC, PRESENCE))
field("ci_len", ProtoField.uint32("dendro.segment.caller_index_len", "Caller index length", base.DEC))
field("ci", ProtoField.bytes("dendro.segment.caller_index", "Caller index"))
-- ClockOffset (5).
field("clock_ts", ProtoField.int64("dendro.clock.ts", "Ts", base.DEC))
field("offset_ns", ProtoField.int64("dendro.clock.offset_ns", "Offset (ns)", base.DEC))
-- SourceUpdate (6).
field("update_ts", ProtoField.int64("dendro.update.ts", "Ts (wall ns)", base.DEC))
-- Unknown kinds.
field("unknown_len", ProtoField.uint32("dendro.unknown.payload_len", "Payload length", base.DEC))
field("unknown", ProtoField.bytes("dendro.unknown.payload", "Payload"))
-- Bytes this dissector does not read as frames.
field("partial", ProtoField.uint32("dendro.partial", "Bytes of a frame cut short", base.DEC))
field("ignored", ProtoField.bytes("dendro.not_dissected", "Not dissected"))

local e = {}
local function expert_field(name, text, group, severity)
    e[name] = ProtoExpert.new("dendro.expert." .. name, text, group, severity)
end
local G, S = expert.group, expert.severity
expert_field("too_long", "Frame length over the 64 MiB limit", G.MALFORMED, S.ERROR)
expert_field("zero_len", "Frame length 0 (a frame has at least its kind byte)", G.MALFORMED, S.ERROR)
expert_field("truncated", "Truncated frame", G.MALFORMED, S.ERROR)
expert_field("preamble", "Not a dendro replication preamble", G.MALFORMED, S.ERROR)
expert_field("version", "Protocol version other than 1", G.PROTOCOL, S.ERROR)
expert_field("stopped", "Stream not dissected past a refused frame", G.MALFORMED, S.NOTE)
expert_field("unknown_kind", "Unknown frame kind, skipped", G.UNDECODED, S.NOTE)
expert_field("bad_bool", "Bool or presence byte neither 0 nor 1", G.MALFORMED, S.ERROR)
expert_field("bad_index_kind", "Index kind neither 0 (full) nor 1 (delta)", G.MALFORMED, S.ERROR)
expert_field("map_order", "Map key not above the key before it", G.MALFORMED, S.ERROR)
expert_field("trailing", "Bytes left over after the frame's fields", G.MALFORMED, S.ERROR)
expert_field("overrun", "Field runs past the end of the frame", G.MALFORMED, S.ERROR)
expert_field("utf8", "String not valid UTF-8", G.MALFORMED, S.ERROR)
expert_field("uuid", "Uuid not canonical lowercase 8-4-4-4-12 hex", G.PROTOCOL, S.WARN)
expert_field("seq_gap", "Seq gap: frames of this source lost", G.SEQUENCE, S.WARN)
expert_field("seq_regression", "Seq regression: not above this source's previous seq", G.SEQUENCE, S.WARN)
expert_field("no_handshake", "Frame for an ordinal with no handshake on this connection", G.PROTOCOL, S.WARN)
expert_field("second_handshake", "Handshake for an ordinal already open on this connection", G.PROTOCOL, S.WARN)
dendro.experts = {}
for _, v in pairs(e) do
    table.insert(dendro.experts, v)
end

dendro.prefs.port = Pref.uint("TCP port", DEFAULT_PORT, "The TCP port dissected as dendro (0: none, heuristics only)")

-- State of the first pass, per direction of a TCP connection (each is a
-- byte stream of its own): what each source's seq was, the packet a
-- refused length stopped the stream at, and the frame the stream was
-- waiting on when the capture ended. What the first pass concludes about a
-- frame is kept by the frame's position, so a later pass (Wireshark's, or
-- tshark -2) shows the same. The direction is named by its addresses and
-- ports, which every pass has (tcp.stream is not extracted in a pass that
-- builds no tree); a capture that reuses a port pair for a second
-- connection is read as one stream.
local streams, notes

local ends
local function reset()
    streams = {}
    notes = {}
    ends = nil
end
reset()
dendro.init = reset

local function stream_state(pinfo)
    local id = tostring(pinfo.src) .. ":" .. pinfo.src_port .. ">" .. tostring(pinfo.dst) .. ":" .. pinfo.dst_port
    local st = streams[id]
    if not st then
        st = { sources = {} }
        streams[id] = st
    end
    return st
end

-- ---------------------------------------------------------------------
-- Bytes, compared and checked as the codec does.

-- Whether a is strictly below b, as bytes.
local function bytes_below(a, b)
    local n = math.min(#a, #b)
    for i = 1, n do
        local x, y = a:byte(i), b:byte(i)
        if x ~= y then
            return x < y
        end
    end
    return #a < #b
end

local function valid_utf8(s)
    local i, n = 1, #s
    while i <= n do
        local c = s:byte(i)
        local more, low, high = 0, 0x80, 0xBF
        if c < 0x80 then
            more = 0
        elseif c >= 0xC2 and c <= 0xDF then
            more = 1
        elseif c >= 0xE0 and c <= 0xEF then
            more = 2
            if c == 0xE0 then low = 0xA0 elseif c == 0xED then high = 0x9F end
        elseif c >= 0xF0 and c <= 0xF4 then
            more = 3
            if c == 0xF0 then low = 0x90 elseif c == 0xF4 then high = 0x8F end
        else
            return false
        end
        if i + more > n then
            return false
        end
        for k = 1, more do
            local d = s:byte(i + k)
            if k == 1 then
                if d < low or d > high then return false end
            elseif d < 0x80 or d > 0xBF then
                return false
            end
        end
        i = i + more + 1
    end
    return true
end

local function canonical_uuid(s)
    if #s ~= 36 then
        return false
    end
    for i = 1, 36 do
        local c = s:sub(i, i)
        if i == 9 or i == 14 or i == 19 or i == 24 then
            if c ~= "-" then return false end
        elseif not c:match("[0-9a-f]") then
            return false
        end
    end
    return true
end

-- ---------------------------------------------------------------------
-- A cursor over one frame's payload: every read checks the bytes are
-- there, and the first that is not marks the frame bad and reads nothing
-- more.

local Cursor = {}
Cursor.__index = Cursor

local function cursor(tvb, pos, stop, tree, item)
    return setmetatable({ tvb = tvb, pos = pos, stop = stop, tree = tree, item = item, bad = false }, Cursor)
end

function Cursor:has(n, what)
    if self.bad then
        return false
    end
    if self.pos + n > self.stop then
        self.item:add_proto_expert_info(e.overrun, what .. " needs " .. n .. " bytes, " ..
            (self.stop - self.pos) .. " left in the frame")
        self.bad = true
        return false
    end
    return true
end

-- A fixed-width field: its range, or nil.
function Cursor:take(n, what)
    if not self:has(n, what) then
        return nil
    end
    local r = self.tvb(self.pos, n)
    self.pos = self.pos + n
    return r
end

function Cursor:u32(pf, what, tree)
    local r = self:take(4, what)
    if not r then return nil end
    local item = (tree or self.tree):add_le(pf, r)
    return r:le_uint(), item
end

function Cursor:u64(pf, what, tree)
    local r = self:take(8, what)
    if not r then return nil end
    (tree or self.tree):add_le(pf, r)
    return r:le_uint64()
end

function Cursor:i64(pf, what, tree)
    local r = self:take(8, what)
    if not r then return nil end
    (tree or self.tree):add_le(pf, r)
    return r:le_int64()
end

-- A byte that must be 0 or 1 (bool, presence).
function Cursor:flag(pf, what, tree)
    local r = self:take(1, what)
    if not r then return nil end
    local v = r:uint()
    local item = (tree or self.tree):add(pf, r)
    if v > 1 then
        item:add_proto_expert_info(e.bad_bool, what .. " is " .. v .. ", neither 0 nor 1")
    end
    return v
end

-- `bytes`: u32 length then the bytes. Shows the length with len_pf (if
-- given) and the bytes with pf; returns the bytes' Lua string (or the
-- empty string past `raw_max`) and their length.
function Cursor:bytes(pf, len_pf, what, tree, raw_max)
    tree = tree or self.tree
    local lr = self:take(4, what .. " length")
    if not lr then return nil end
    local n = lr:le_uint()
    if len_pf then
        tree:add_le(len_pf, lr)
    end
    if not self:has(n, what) then
        return nil
    end
    local s = ""
    if n > 0 then
        local r = self.tvb(self.pos, n)
        if pf then
            tree:add(pf, r)
        end
        if not raw_max or n <= raw_max then
            s = r:raw()
        end
    end
    self.pos = self.pos + n
    return s, n
end

-- `str`: `bytes` that are UTF-8, shown as text.
function Cursor:str(pf, what, tree)
    tree = tree or self.tree
    local lr = self:take(4, what .. " length")
    if not lr then return nil end
    local n = lr:le_uint()
    if not self:has(n, what) then
        return nil
    end
    local item, s
    if n > 0 then
        local r = self.tvb(self.pos, n)
        s = r:raw()
        item = tree:add(pf, self.tvb(self.pos - 4, n + 4), r:string(ENC_UTF_8))
    else
        s = ""
        item = tree:add(pf, lr, "")
    end
    if not valid_utf8(s) then
        item:add_proto_expert_info(e.utf8, what .. " is not valid UTF-8")
    end
    self.pos = self.pos + n
    return s, item
end

-- `map`: u32 count, then count (str key, str value), keys strictly
-- ascending.
function Cursor:map(count_pf, what)
    local start = self.pos
    local lr = self:take(4, what .. " count")
    if not lr then return nil end
    local n = lr:le_uint()
    local sub = self.tree:add(count_pf, lr)
    sub:set_text(what .. ": " .. n .. (n == 1 and " entry" or " entries"))
    -- Each entry takes at least 8 bytes (§8.11).
    if not self:has(n * 8, what .. "'s " .. n .. " entries") then
        return nil
    end
    local prev
    for _ = 1, n do
        local at = self.pos
        local entry = sub:add(self.tvb(at, 0), "Entry")
        local k, kitem = self:str(f.key, what .. " key", entry)
        if not k then return nil end
        local v = self:str(f.value, what .. " value", entry)
        if not v then return nil end
        entry:set_len(self.pos - at)
        entry:set_text(k .. " = " .. v)
        if prev and not bytes_below(prev, k) then
            kitem:add_proto_expert_info(e.map_order, what .. ": key " .. string.format("%q", k) ..
                " is not above the key before it, " .. string.format("%q", prev))
        end
        prev = k
    end
    sub:set_len(self.pos - start)
    return n
end

-- ---------------------------------------------------------------------
-- The index blob of this project's publisher (§9), shown when the blob
-- parses as one exactly; the protocol itself keeps the blob opaque.

local function show_slots(tvb, pos, n, kind, tree)
    local stop = pos + n
    local entries = {}
    local p = pos
    while p < stop do
        if p + 4 > stop then return end
        local klen = tvb(p, 4):le_uint()
        if p + 4 + klen > stop then return end
        local entry = { at = p, key = p + 4, klen = klen }
        p = p + 4 + klen
        local present = 1
        if kind == 1 then
            if p + 1 > stop then return end
            present = tvb(p, 1):uint()
            if present > 1 then return end
            entry.present = p
            p = p + 1
        end
        if present == 1 then
            if p + 4 > stop then return end
            local vlen = tvb(p, 4):le_uint()
            if p + 4 + vlen > stop then return end
            entry.value, entry.vlen = p + 4, vlen
            p = p + 4 + vlen
        end
        entry.stop = p
        table.insert(entries, entry)
    end
    local sub = tree:add(tvb(pos, n), "Slots (this project's publisher's blob, docs/PROTOCOL.md §9): "
        .. #entries)
    for _, s in ipairs(entries) do
        local slot = sub:add(tvb(s.at, s.stop - s.at), "Slot")
        local function text(at, len)
            if len == 0 then return "" end
            return tvb(at, len):string(ENC_UTF_8)
        end
        slot:add(f.slot_key, tvb(s.at, 4 + s.klen), text(s.key, s.klen))
        if s.present then
            slot:add(f.slot_present, tvb(s.present, 1))
        end
        if s.value then
            slot:add(f.slot_value, tvb(s.value - 4, 4 + s.vlen), text(s.value, s.vlen))
            slot:append_text(": " .. text(s.key, s.klen) .. " = " .. text(s.value, s.vlen))
        else
            slot:append_text(": " .. text(s.key, s.klen) .. " removed")
        end
    end
end

-- ---------------------------------------------------------------------
-- The frames. Each returns a short text for the Info column.

local function handshake(c)
    local src = c:u32(f.source, "source")
    if not src then return "" end
    local present = c:flag(f.uuid_present, "uuid presence")
    if present == 1 then
        local s, item = c:str(f.uuid, "uuid")
        if s and not canonical_uuid(s) then
            item:add_proto_expert_info(e.uuid, "uuid " .. string.format("%q", s) ..
                " is not canonical lowercase 8-4-4-4-12 hex (docs/PROTOCOL.md §8.2)")
        end
    end
    if present and present <= 1 then
        c:map(f.labels, "Labels")
        c:map(f.metadata, "Metadata")
        c:i64(f.anchor, "clock_anchor_wall_ns")
        c:flag(f.complete, "complete")
    end
    if present and present > 1 then
        c.bad = true
    end
    return src
end

local function index(c)
    local src = c:u32(f.source, "source")
    if not src then return end
    c:str(f.index_stream, "stream")
    c:i64(f.index_ts, "ts")
    local r = c:take(1, "kind")
    if not r then return src end
    local kind = r:uint()
    local item = c.tree:add(f.index_kind, r)
    if kind > 1 then
        item:add_proto_expert_info(e.bad_index_kind, "index kind " .. kind)
    end
    c:u64(f.state0, "state.0")
    c:u64(f.state1, "state.1")
    local at = c.pos + 4
    local _, n = c:bytes(f.blob, f.blob_len, "blob", nil, 0)
    if n and n > 0 and kind <= 1 then
        show_slots(c.tvb, at, n, kind, c.tree)
    end
    return src, INDEX_KIND[kind]
end

local function rows(c)
    local src = c:u32(f.source, "source")
    if not src then return end
    local seq = c:u64(f.seq, "seq")
    c:u64(f.istate0, "index_state.0")
    c:u64(f.istate1, "index_state.1")
    local lr = c:take(4, "count")
    if not lr then return src, seq end
    local n = lr:le_uint()
    local list = c.tree:add_le(f.rows, lr)
    -- A row takes at least 24 bytes (§8.11).
    if not c:has(n * 24, n .. " rows") then
        return src, seq, n
    end
    for i = 1, n do
        local start = c.pos
        local row = list:add(c.tvb(start, 0), "Row " .. (i - 1))
        local stream = c:str(f.row_stream, "row stream", row)
        local ts = c:i64(f.row_ts, "row ts", row)
        c:i64(f.row_wall, "row wall_offset", row)
        local _, len = c:bytes(f.row, f.row_len, "row", row, 0)
        if not len then break end
        row:set_len(c.pos - start)
        row:append_text(": " .. stream .. " @ " .. tostring(ts) .. ", " .. len .. " bytes")
    end
    return src, seq, n
end

local function segment(c)
    local src = c:u32(f.source, "source")
    if not src then return end
    c:str(f.seg_stream, "stream")
    c:u64(f.seg_rows, "rows")
    c:i64(f.seg_first, "first_ts")
    c:i64(f.seg_last, "last_ts")
    c:bytes(f.seg_bytes, f.seg_len, "bytes", nil, 0)
    local present = c:flag(f.ci_present, "caller_index presence")
    if present == 1 then
        c:bytes(f.ci, f.ci_len, "caller_index", nil, 0)
    elseif present and present > 1 then
        c.bad = true
    end
    return src
end

local function clock_offset(c)
    local src = c:u32(f.source, "source")
    c:i64(f.clock_ts, "ts")
    c:i64(f.offset_ns, "offset_ns")
    return src
end

local function source_update(c)
    local src = c:u32(f.source, "source")
    c:i64(f.update_ts, "ts")
    c:map(f.labels, "Labels")
    c:map(f.metadata, "Metadata")
    return src
end

-- What the first pass concluded about a source's frame (seq gaps and
-- regressions, handshakes), kept under the frame's key.
local function source_notes(st, key, kind, src, seq, first)
    if not first then
        return notes[key]
    end
    local out = {}
    local known = st.sources[src]
    if kind == 1 then
        if known then out.second = true end
        st.sources[src] = {}
    elseif not known then
        out.no_handshake = true
    end
    if kind == 3 and seq then
        known = st.sources[src]
        if known and known.last then
            if seq <= known.last then
                out.regression = known.last
            elseif seq ~= known.last + 1 then
                out.gap = seq - known.last - 1
                out.prev = known.last
            end
        end
        if known then known.last = seq end
    end
    notes[key] = out
    return out
end

local function show_notes(n, item, tree, range, src)
    if not n then return end
    if n.second then
        item:add_proto_expert_info(e.second_handshake, "source " .. src ..
            " already has a handshake on this connection (docs/PROTOCOL.md §8.4)")
    end
    if n.no_handshake then
        item:add_proto_expert_info(e.no_handshake, "source " .. src .. " has no handshake before this frame (rule 1)")
    end
    if n.gap then
        local p = tree:add(f.prev_seq, range, n.prev)
        p:set_generated()
        local l = tree:add(f.lost, range, n.gap)
        l:set_generated()
        l:add_proto_expert_info(e.seq_gap, "seq gap on source " .. src .. ": " .. tostring(n.gap) ..
            " frame(s) lost after seq " .. tostring(n.prev))
    end
    if n.regression then
        local p = tree:add(f.regression, range, n.regression)
        p:set_generated()
        p:add_proto_expert_info(e.seq_regression, "seq regression on source " .. src ..
            ": not above the previous " .. tostring(n.regression) .. " (docs/PROTOCOL.md §8.5)")
    end
end

local FRAMES = { handshake, index, rows, segment, clock_offset, source_update }

-- One whole frame at `offset` (4 + len bytes are there). Returns a text
-- for the Info column.
local function frame(tvb, pinfo, tree, offset, len, st, key)
    local first = not pinfo.visited
    local item = tree:add(dendro, tvb(offset, 4 + len))
    item:add_le(f.len, tvb(offset, 4))
    local kind = tvb(offset + 4, 1):uint()
    local kitem = item:add(f.kind, tvb(offset + 4, 1))
    local c = cursor(tvb, offset + 5, offset + 4 + len, item, item)
    local decode = FRAMES[kind]
    if not decode then
        item:set_text("dendro Unknown kind " .. kind .. ", " .. (len - 1) .. " payload bytes")
        item:add(f.unknown_len, tvb(offset, 4), len - 1)
        if len > 1 then
            item:add(f.unknown, tvb(offset + 5, len - 1))
        end
        kitem:add_proto_expert_info(e.unknown_kind, "unknown kind " .. kind .. ", skipped (" ..
            (len - 1) .. " payload bytes)")
        return "Unknown(" .. kind .. ")"
    end
    local src, a, b = decode(c)
    local name = KINDS[kind]
    local info = name
    if src then
        info = info .. " src=" .. src
        local n = source_notes(st, key, kind, src, kind == 3 and a or nil, first)
        show_notes(n, item, item, tvb(offset, 4 + len), src)
    end
    if kind == 3 and a then
        info = info .. " seq=" .. tostring(a) .. (b and (" rows=" .. b) or "")
    elseif kind == 2 and a then
        info = info .. " " .. a
    end
    item:set_text("dendro " .. info .. ", len " .. len)
    if not c.bad and c.pos < c.stop then
        item:add(f.ignored, tvb(c.pos, c.stop - c.pos)):add_proto_expert_info(e.trailing,
            (c.stop - c.pos) .. " byte(s) left over after the fields of " .. name)
    end
    return info
end

-- Whether the bytes at `offset` start the preamble, as far as they go.
-- Four bytes decide: "dend" read as a length is over the limit.
local function preamble_prefix(tvb, offset, avail)
    local n = math.min(avail, 4)
    return tvb(offset, n):raw() == MAGIC:sub(1, n)
end

-- The packet whose Info column this dissector last wrote: a packet that
-- completes one frame and starts others calls it more than once.
local info_packet

local function dissect(tvb, pinfo, tree)
    local total = tvb:len()
    if total == 0 then return 0 end
    local st = stream_state(pinfo)
    pinfo.cols.protocol = "dendro"
    local first = not pinfo.visited
    local infos = {}
    local offset = 0
    local function done()
        if #infos > 0 then
            local text = table.concat(infos, "; ")
            if info_packet == pinfo.number then
                pinfo.cols.info:append("; " .. text)
            else
                pinfo.cols.info = text
            end
            info_packet = pinfo.number
        end
        return total
    end
    local function stop_rest(text)
        if offset < total then
            local item = tree:add(dendro, tvb(offset, total - offset), "dendro (not dissected)")
            item:add(f.ignored, tvb(offset, total - offset))
            item:add_proto_expert_info(e.stopped, text)
        end
        offset = total
    end
    if st.stopped_at and pinfo.number > st.stopped_at then
        stop_rest("the stream stopped at the refused frame in packet " .. st.stopped_at)
        table.insert(infos, "(after a refused frame)")
        return done()
    end
    local function refuse()
        if first then st.stopped_at = pinfo.number end
    end
    while offset < total do
        local avail = total - offset
        local key = pinfo.number .. ":" .. total .. ":" .. offset
        -- The bytes needed before this unit can be dissected.
        local need
        local is_preamble = avail >= 1 and preamble_prefix(tvb, offset, avail)
        -- A preamble opens a stream; later, those bytes are a length over
        -- the limit, as a reader reads them.
        if is_preamble and avail >= 4 then
            if first then
                is_preamble = not st.started
                notes[key .. "p"] = is_preamble
            else
                is_preamble = notes[key .. "p"] or false
            end
        end
        if avail < 4 then
            need = 4
        elseif is_preamble then
            need = PREAMBLE
        else
            local len = tvb(offset, 4):le_uint()
            if len == 0 or len > MAX_FRAME then
                local item = tree:add(dendro, tvb(offset, 4), "dendro frame refused")
                item:add_le(f.len, tvb(offset, 4))
                if len == 0 then
                    item:add_proto_expert_info(e.zero_len, "length 0: every frame has a kind byte")
                else
                    item:add_proto_expert_info(e.too_long, "length " .. len .. " is over the limit of " ..
                        MAX_FRAME .. " bytes: the frame is refused and the stream ends here")
                end
                table.insert(infos, "refused frame (length " .. len .. ")")
                refuse()
                offset = offset + 4
                stop_rest("a reader refuses the stream at the length before these bytes")
                return done()
            end
            need = 4 + len
        end
        if avail < need then
            -- A frame cut by the capture's snapshot length cannot be
            -- reassembled.
            if tvb:reported_length_remaining(offset) > avail then
                local item = tree:add(dendro, tvb(offset, avail), "dendro frame cut by the capture")
                item:add(f.partial, tvb(offset, avail), avail)
                item:add_proto_expert_info(e.truncated, "the capture holds " .. avail .. " of the frame's " ..
                    need .. " bytes")
                table.insert(infos, "cut frame")
                return done()
            end
            if first then
                st.pending = { number = pinfo.number, have = avail, need = need, preamble = is_preamble }
            end
            pinfo.desegment_offset = offset
            pinfo.desegment_len = need - avail
            return done()
        end
        if first then
            st.pending = nil
            st.started = true
        end
        if is_preamble then
            local item = tree:add(dendro, tvb(offset, PREAMBLE), "dendro preamble")
            local m = item:add(f.magic, tvb(offset, 12), "dendro-repl\\0")
            local version = tvb(offset + 12, 2):le_uint()
            local v = item:add_le(f.version, tvb(offset + 12, 2))
            offset = offset + PREAMBLE
            if tvb(offset - PREAMBLE, 12):raw() ~= MAGIC then
                m:add_proto_expert_info(e.preamble, "the magic is not \"dendro-repl\\0\"")
                refuse()
                stop_rest("a reader refuses a stream whose preamble is not dendro's")
                return done()
            end
            if version ~= 1 then
                v:add_proto_expert_info(e.version, "version " .. version .. ": only version 1 is dissected")
                refuse()
                stop_rest("a reader refuses a version it does not implement")
                return done()
            end
            table.insert(infos, "Preamble v1")
        else
            table.insert(infos, frame(tvb, pinfo, tree, offset, need - 4, st, key))
            offset = offset + need
        end
    end
    return done()
end

dendro.dissector = dissect

-- A frame the capture ends inside. TCP holds a frame's first segment until
-- the rest arrives, and on a later pass does not hand it to this dissector
-- again, so this postdissector marks it: on a later pass (Wireshark's, or
-- tshark -2), the packet each stream was still waiting on when the first
-- pass ended.
local truncated = Proto("dendro_truncated", "dendro frame the capture ends inside")

function truncated.dissector(tvb, pinfo, tree)
    if not pinfo.visited then return end
    if not ends then
        ends = {}
        for _, st in pairs(streams) do
            if st.pending then ends[st.pending.number] = st.pending end
        end
    end
    local p = ends[pinfo.number]
    if not p then return end
    local item = tree:add(dendro, tvb(0, 0), "dendro truncated " .. (p.preamble and "preamble" or "frame"))
    item:add(f.partial, tvb(0, 0), p.have)
    item:add_proto_expert_info(e.truncated, "the capture ends inside the " ..
        (p.preamble and "preamble" or "frame") .. " that starts in this packet: " ..
        (p.have < 4 and "its length is cut" or ("it has " .. p.need .. " bytes with its length")) ..
        ", " .. p.have .. " of them in this packet")
    pinfo.cols.info:append(" [dendro: the capture ends inside a frame]")
end

register_postdissector(truncated)

-- The heuristic: a segment that starts with the preamble, or with as much
-- of it as it holds at the very start of a TCP stream (the preamble split
-- across segments). Once it matches, the connection is dendro's.
local tcp_seq_f = Field.new("tcp.seq")

local function heuristic(tvb, pinfo, tree)
    local avail = tvb:len()
    if avail < 1 then return false end
    if avail >= PREAMBLE then
        if tvb(0, 12):raw() ~= MAGIC or tvb(12, 2):le_uint() ~= 1 then
            return false
        end
    else
        -- tcp.seq is there when the pass builds a tree; without it, four
        -- bytes of the magic at a segment's start will do.
        local seq = tcp_seq_f()
        local start = seq and seq.value == 1 or (not seq and avail >= 4)
        if not start or tvb(0, math.min(avail, 12)):raw() ~= MAGIC:sub(1, avail) then
            return false
        end
    end
    pinfo.conversation = dendro
    dissect(tvb, pinfo, tree)
    return true
end

dendro:register_heuristic("tcp", heuristic)

local registered = 0
function dendro.prefs_changed()
    local port = dendro.prefs.port
    if port == registered then return end
    local tcp = DissectorTable.get("tcp.port")
    if registered ~= 0 then tcp:remove(registered, dendro) end
    if port ~= 0 then tcp:add(port, dendro) end
    registered = port
end
DissectorTable.get("tcp.port"):add(DEFAULT_PORT, dendro)
registered = DEFAULT_PORT

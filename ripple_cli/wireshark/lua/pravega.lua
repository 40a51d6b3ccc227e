-- Pravega segment-store wire commands (ripple-pravega(7)): an int32 type
-- and an int32 length, big-endian, then the body, read by the layouts of
-- ripple's decoder: integers, booleans, UUIDs, writeUTF strings, data as
-- a run of event records; optional trailing fields when bytes remain.

local PRAVEGA_PORT = 12345
local NAMES = @@NAMES@@
-- code -> the body's fields in wire order: {name, kind, optional}.
local LAYOUTS = @@LAYOUTS@@
-- code -> who sends it: request, reply or both.
local SIDES = @@SIDES@@

local p = Proto("pravega", "Pravega wire commands")
local F = {
    type = ProtoField.string("pravega.type", "Type"),
    type_code = ProtoField.int32("pravega.type_code", "Type code"),
    body_length = ProtoField.int32("pravega.body_length", "Body length"),
    body = ProtoField.bytes("pravega.body", "Body"),
    trailing = ProtoField.bytes("pravega.trailing", "Trailing bytes"),
    length = ProtoField.uint32("pravega.length", "Padding length"), -- ripple's `length`: a Padding's zero bytes
    data = ProtoField.bytes("pravega.data", "Data"),
    event = ProtoField.bytes("pravega.event", "Event record"),
    data_length = ProtoField.uint32("pravega.data.length", "Data length"),
    event_count = ProtoField.uint32("pravega.data.event_count", "Whole events"),
    record = ProtoField.string("pravega.record", "Record"),
    record_data = ProtoField.bytes("pravega.record.data", "Record data"),
}
local by_kind = { i32 = ProtoField.int32, i64 = ProtoField.int64, bool = ProtoField.bool, uuid = ProtoField.guid, utf = ProtoField.string }
for _, layout in pairs(LAYOUTS) do
    for _, fd in ipairs(layout) do
        local maker = by_kind[fd[2]]
        if maker and not F[fd[1]] then F[fd[1]] = maker("pravega." .. fd[1], fd[1]) end
    end
end
set_fields(p, F)
local E_BODY = ProtoExpert.new("pravega.bad_body", "Body does not fit its layout", expert.group.MALFORMED, expert.severity.WARN)
local E_BAD = ProtoExpert.new("pravega.bad_header", "Not a Pravega command", expert.group.MALFORMED, expert.severity.WARN)
p.experts = { E_BODY, E_BAD }

local Short = {}
local MAX_BODY = 0x00FFFFFF - 8
local MAX_PENDING = @@MAX_PENDING@@
local MAX_PAYLOAD = @@MAX_PAYLOAD@@ -- ripple's default --max-payload -- the longest cut event a direction keeps (ripple's _worth_keeping)

-- ---------------------------------------------------------------- records
-- Data is a run of records (protocols/pravega/records.py): split from a
-- string as ripple splits it, its first `cont` bytes finishing an event
-- begun in an earlier message.

local function i32(s, i) -- the big-endian int32 at byte i (1-based)
    local a, b, c, d = s:byte(i, i + 3)
    local n = ((a * 256 + b) * 256 + c) * 256 + d
    return n >= 0x80000000 and n - 0x100000000 or n
end

local function whole_size(head)
    if #head < 8 then return nil end
    local n = i32(head, 5)
    return n >= 0 and 8 + n or nil
end

local function split(data, cont)
    local out, n = {}, #data
    local at = math.min(cont, n)
    if at > 0 then out[1] = { kind = "Continuation", offset = 0, size = at } end
    while at < n do
        if n - at < 8 then out[#out + 1] = { kind = "Fragment", offset = at, size = n - at }; break end
        local code, len = i32(data, at + 1), i32(data, at + 5)
        if len < 0 or at + 8 + len > n then out[#out + 1] = { kind = "Fragment", offset = at, size = n - at }; break end
        local kind = "Command"
        if code == 0 then kind = "Event"
        elseif code == -2 then kind = "PartialEvent"
        elseif code == -1 and not data:sub(at + 9, at + 8 + len):find("[^%z]") then kind = "Padding" end
        out[#out + 1] = { kind = kind, offset = at, size = 8 + len }
        at = at + 8 + len
    end
    return out
end

-- ---------------------------------------------------------------- joins
-- What spans commands of one direction (protocols/pravega/stream.py): a
-- block's PartialEvent, finished by the AppendBlockEnd's data; a read cut
-- inside an event, finished by the next read of that segment.

local blocks, reads = {}, {} -- by direction: the open block; segment -> {stop, pending}, oldest first
local MAX_TRACKED_READS = @@MAX_TRACKED_READS@@ -- segments whose cut event a direction remembers

-- The direction's cut reads, bounded as ripple bounds them: at most
-- MAX_TRACKED_READS segments, and no more pending bytes in all than one
-- command may have; the oldest go first.
local function bound_reads(list)
    local total = 0
    for _, r in ipairs(list) do total = total + #r.pending end
    while #list > MAX_TRACKED_READS or (#list > 1 and total > MAX_PAYLOAD) do
        total = total - #list[1].pending
        table.remove(list, 1)
    end
end

local function open_block(dir, v)
    local partial
    if v.data then
        local recs = split(v.data, 0)
        local last = recs[#recs]
        if last and last.kind == "PartialEvent" then partial = v.data:sub(last.offset + 9, last.offset + last.size) end
    end
    blocks[dir] = { writer = v.writer_id, partial = partial }
end

local function join_block(dir, v)
    local block = blocks[dir]
    blocks[dir] = nil
    if not block or not block.partial or block.writer ~= v.writer_id or not v.data then return 0 end
    local cont = 0
    for _, r in ipairs(split(block.partial .. v.data, 0)) do
        if r.offset < #block.partial then cont = math.min(#v.data, math.max(0, r.offset + r.size - #block.partial)) end
    end
    return cont
end

local function join_read(dir, v)
    local seg, off, data = v.segment, v.segment_offset, v.data
    if not (seg and off and data) then return 0 end
    off = tonumber(tostring(off))
    reads[dir] = reads[dir] or {}
    local list, last = reads[dir], nil
    for k, r in ipairs(list) do
        if r.segment == seg then last = table.remove(list, k) break end
    end
    local cont, pending = 0, ""
    if last and #last.pending > 0 and last.stop == off then
        local joined = last.pending .. data
        local total = whole_size(joined:sub(1, 8))
        if total == nil and #joined >= 8 then -- the cut record's header is no header: nothing to join
        elseif total == nil or total > #joined then
            cont, pending = #data, joined
        else
            cont = total - #last.pending
        end
    end
    if pending == "" then
        local recs = split(data, cont)
        local tail = recs[#recs]
        if tail and tail.kind == "Fragment" then pending = data:sub(tail.offset + 1) end
    end
    if pending ~= "" then
        local total = whole_size(pending:sub(1, 8))
        if (total == nil and #pending < 8) or (total ~= nil and total <= MAX_PENDING) then
            list[#list + 1] = { segment = seg, stop = off + #data, pending = pending }
            bound_reads(list)
        end
    end
    return cont
end

-- ---------------------------------------------------------------- the summary
-- What ripple's table shows (protocols/pravega/text.py summary).

local function n_(x)
    if x == nil then return "?" end
    local t = tostring(x)
    return t == "-9223372036854775808" and "none" or t
end
local OCAML_ESC = { [0x0A] = "\\n", [0x09] = "\\t", [0x0D] = "\\r", [0x08] = "\\b" }

-- A writeUTF string as ripple's summary shows it (protocols/pravega/
-- mutf8.py, then the table's escape_text): "?" when Java would not read it.
local function s_(raw)
    if raw == nil then return "?" end
    local units, i, n = {}, 1, #raw
    local band, bor, lshift = bit32.band, bit32.bor, bit32.lshift
    while i <= n do
        local c = raw:byte(i)
        if c < 0x80 then
            units[#units + 1], i = c, i + 1
        elseif c >= 0xC0 and c < 0xE0 then
            local c2 = raw:byte(i + 1)
            if not c2 or band(c2, 0xC0) ~= 0x80 then return "?" end
            units[#units + 1], i = bor(lshift(band(c, 0x1F), 6), band(c2, 0x3F)), i + 2
        elseif c >= 0xE0 and c < 0xF0 then
            local c2, c3 = raw:byte(i + 1, i + 2)
            if not c3 or band(c2, 0xC0) ~= 0x80 or band(c3, 0xC0) ~= 0x80 then return "?" end
            units[#units + 1] = bor(lshift(band(c, 0x0F), 12), lshift(band(c2, 0x3F), 6), band(c3, 0x3F))
            i = i + 3
        else
            return "?"
        end
    end
    local out, k = {}, 1
    while k <= #units do
        local u, low = units[k], units[k + 1]
        if u >= 0xD800 and u < 0xDC00 and low and low >= 0xDC00 and low < 0xE000 then
            u, k = 0x10000 + (u - 0xD800) * 0x400 + (low - 0xDC00), k + 1
        end
        k = k + 1
        if u < 0x20 or u == 0x7F then
            out[#out + 1] = OCAML_ESC[u] or string.format("\\%03d", u)
        elseif u >= 0xDC80 and u <= 0xDCFF then
            out[#out + 1] = string.format("\\%03d", u - 0xDC00)
        elseif unprintable(u) then
            out[#out + 1] = string.format("\\u{%04X}", u)
        else
            out[#out + 1] = utf8_char(u)
        end
    end
    return table.concat(out)
end
local function w_(x) return x and string.format("%08x", i32(x, 1) % 0x100000000) or "?" end

local function data_(v, recs)
    if not v.data then return "" end
    local events, others = 0, {}
    for _, r in ipairs(recs) do
        if r.kind == "Event" then events = events + 1 else others[#others + 1] = r.kind .. " " .. r.size end
    end
    local parts = { events .. " event" .. (events ~= 1 and "s" or "") .. " in " .. #v.data .. " bytes" }
    for _, o in ipairs(others) do parts[#parts + 1] = o end
    return table.concat(parts, ", ")
end

local function summary(name, v, recs)
    if name == "Hello" then return "versions " .. n_(v.low_version) .. ".." .. n_(v.high_version) end
    if name == "KeepAlive" then return "keep-alive" end
    if name == "PartialEvent" then return #(v.data or "") .. " bytes of a cut event" end
    if name == "SetupAppend" then
        return "writer " .. w_(v.writer_id) .. " to " .. s_(v.segment) .. " (request " .. n_(v.request_id) .. ")"
    end
    if name == "AppendSetup" then
        return "writer " .. w_(v.writer_id) .. " on " .. s_(v.segment) .. ", last event " .. n_(v.last_event_number)
    end
    if name == "AppendBlock" then return "writer " .. w_(v.writer_id) .. ": " .. data_(v, recs) end
    if name == "AppendBlockEnd" then
        local text = "writer " .. w_(v.writer_id) .. ": " .. n_(v.num_events) .. " event"
            .. (tostring(v.num_events) == "1" and "" or "s") .. " up to #" .. n_(v.last_event_number)
            .. ", whole " .. n_(v.size_of_whole_events) .. " bytes"
        if v.data and #v.data > 0 then text = text .. "; " .. data_(v, recs) end
        return text
    end
    if name == "ConditionalAppend" or name == "ConditionalBlockEnd" then
        return "writer " .. w_(v.writer_id) .. ": event #" .. n_(v.event_number) .. " at offset " .. n_(v.expected_offset)
    end
    if name == "DataAppended" then
        local text = "writer " .. w_(v.writer_id) .. ": acked up to #" .. n_(v.event_number)
        if v.previous_event_number ~= nil then text = text .. " (from #" .. n_(v.previous_event_number) .. ")" end
        return text
    end
    if name == "ConditionalCheckFailed" or name == "InvalidEventNumber" then
        return "writer " .. w_(v.writer_id) .. ": event #" .. n_(v.event_number)
    end
    if name == "ReadSegment" then
        return s_(v.segment) .. " at " .. n_(v.segment_offset) .. ", up to " .. n_(v.suggested_length) .. " bytes"
    end
    if name == "SegmentRead" then
        local text = s_(v.segment) .. " at " .. n_(v.segment_offset) .. ": " .. data_(v, recs)
        for _, f in ipairs({ "at_tail", "end_of_segment" }) do if v[f] then text = text .. ", " .. f end end
        return text
    end
    if name == "WrongHost" then return s_(v.segment) .. ": go to " .. s_(v.correct_host) end
    if name == "OperationUnsupported" then
        return s_(v.operation_name) .. " (request " .. n_(v.request_id) .. ")"
    end
    if name == "ErrorMessage" then
        return s_(v.segment) .. ": " .. s_(v.message) .. " (code " .. n_(v.error_code) .. ")"
    end
    if name == "AuthTokenCheckFailed" then
        return "request " .. n_(v.request_id) .. " (code " .. n_(v.error_code == nil and -1 or v.error_code) .. ")"
    end
    return v.segment and (s_(v.segment) .. " (request " .. n_(v.request_id) .. ")") or name
end

-- ---------------------------------------------------------------- the body

-- The fields of a body by its layout: {field, range, how, name}; Short
-- when it does not fit.
local function read_body(tvb, code, at, n)
    local i, stop = at, at + n
    local function take(k) if i + k > stop then error(Short, 0) end local r = tvb(i, k); i = i + k; return r end
    local items = {}
    for _, fd in ipairs(LAYOUTS[code]) do
        local name, kind, optional = fd[1], fd[2], fd[3]
        if optional then
            local left = stop - i
            if (kind == "utf" and left == 0) or (kind == "i32" and left < 4) or (kind == "i64" and left < 8) then break end
        end
        local it
        if kind == "i32" then it = { F[name], take(4), "int" }
        elseif kind == "i64" then it = { F[name], take(8), "int64" }
        elseif kind == "bool" then it = { F[name], take(1), "bool" }
        elseif kind == "uuid" then it = { F[name], take(16), "guid" }
        elseif kind == "utf" then
            local len = take(2):uint()
            it = { F[name], len > 0 and take(len) or tvb(i, 0), "utf" }
        elseif kind == "blob" then
            local len = take(4):int()
            if len < 0 then error(Short, 0) end
            it = { F.data, len > 0 and take(len) or tvb(i, 0), "data" }
        elseif kind == "rest" or kind == "raw" then
            it = { F.data, stop > i and take(stop - i) or tvb(i, 0), kind == "rest" and "data" or "raw" }
        else -- event: one record with its own header
            take(4)
            local len = take(4):int()
            if len < 0 then error(Short, 0) end
            i = i - 8
            it = { F.event, take(8 + len), "raw" }
        end
        it[4] = name
        items[#items + 1] = it
    end
    return items, i
end

-- The values ripple's summary reads, by field name.
local function values_of(items)
    local v = {}
    for _, it in ipairs(items) do
        local r, how, name = it[2], it[3], it[4]
        local raw = r:len() > 0 and r:raw() or ""
        if how == "int" then v[name] = r:int()
        elseif how == "int64" then v[name] = r:int64()
        elseif how == "bool" then v[name] = r:uint() ~= 0
        elseif how == "guid" or how == "utf" then v[name] = raw
        elseif how == "data" or (how == "raw" and name == "data") then v.data = raw
        end
    end
    return v
end

local function add_body(tvb, tree, items, cont, i, stop)
    local recs
    for _, it in ipairs(items) do
        local f, r, how = it[1], it[2], it[3]
        if how == "bool" then tree:add(f, r, r:uint() ~= 0)
        elseif how == "utf" then tree:add(f, r, r:len() > 0 and r:raw() or "")
        elseif how ~= "data" then tree:add(f, r)
        else
            local d = tree:add(f, r)
            d:add(F.data_length, r, r:len()):set_generated()
            recs = split(r:len() > 0 and r:raw() or "", cont)
            local events = 0
            for _, rc in ipairs(recs) do if rc.kind == "Event" then events = events + 1 end end
            d:add(F.event_count, r, events):set_generated()
            for _, rc in ipairs(recs) do
                local x = d:add(F.record, tvb(r:offset() + rc.offset, rc.size), rc.kind)
                local skip = (rc.kind == "Continuation" or rc.kind == "Fragment") and 0 or 8
                if rc.size > skip then x:add(F.record_data, tvb(r:offset() + rc.offset + skip, rc.size - skip)) end
            end
        end
    end
    if i < stop then tree:add(F.trailing, tvb(i, stop - i)) end
    return recs or {}
end

local function command(tvb, pinfo, tree, at, n, dir)
    local code = tvb(at, 4):int()
    local name = NAMES[code] or "Unknown"
    local root = tree:add(p, tvb(at, 8 + n))
    root:add(F.type, tvb(at, 4), name)
    root:add(F.type_code, tvb(at, 4))
    root:add(F.body_length, tvb(at + 4, 4))
    local ok, items, i = false, nil, nil
    if LAYOUTS[code] then
        ok, items, i = pcall(read_body, tvb, code, at + 8, n)
        if not ok and items ~= Short then error(items, 0) end
    end
    local v = ok and values_of(items) or {}
    local cont = 0
    if ok and code == 4 then cont = join_block(dir, v) elseif ok and code == 10 then cont = join_read(dir, v) end
    if code == 3 then open_block(dir, v)
    elseif code ~= 4 and SIDES[code] ~= "reply" then blocks[dir] = nil end
    local line
    if code == -1 and not (n > 0 and tvb(at + 8, n):raw():find("[^%z]")) then
        root:add(F.length, tvb(at + 4, 4), n)
        line = n .. " bytes of padding"
    elseif ok then
        line = summary(name, v, add_body(tvb, root, items, cont, i, at + 8 + n))
    else
        if LAYOUTS[code] then root:add_proto_expert_info(E_BODY) end
        if n > 0 then root:add(F.body, tvb(at + 8, n)) end
        line = (NAMES[code] and name or ("type " .. code)) .. ": " .. n .. " bytes shown raw"
    end
    root:append_text(", " .. name)
    set_info(pinfo, "Pravega", name .. " " .. line)
end

local function dissect(tvb, pinfo, tree)
    local dir = tostring(pinfo.src) .. ":" .. pinfo.src_port .. ">" .. tostring(pinfo.dst) .. ":" .. pinfo.dst_port
    local at, len = 0, tvb:len()
    while at < len do
        if len - at < 8 then
            pinfo.desegment_offset, pinfo.desegment_len = at, DESEGMENT_ONE_MORE_SEGMENT
            return len
        end
        local n = tvb(at + 4, 4):int()
        if n < 0 or n > MAX_BODY then
            local root = tree:add(p, tvb(at, len - at))
            root:add_proto_expert_info(E_BAD)
            set_info(pinfo, "Pravega", "not Pravega: " .. (len - at) .. " bytes")
            return len
        end
        if len - at < 8 + n then
            pinfo.desegment_offset, pinfo.desegment_len = at, 8 + n - (len - at)
            return len
        end
        command(tvb, pinfo, tree, at, n, dir)
        at = at + 8 + n
    end
    return len
end
p.dissector = dissect

-- A connection that opens with Hello: type -127, length 8.
local function looks(tvb)
    return not (tvb:len() < 8 or tvb(0, 4):int() ~= -127 or tvb(4, 4):int() ~= 8)
end

register_tcp(p, PRAVEGA_PORT, "Pravega", dissect, looks)

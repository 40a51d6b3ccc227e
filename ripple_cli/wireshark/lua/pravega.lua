-- Pravega segment-store wire commands (ripple-pravega(7)): an int32 type
-- and an int32 length, big-endian, then the body, read by the layouts of
-- ripple's decoder: integers, booleans, UUIDs, writeUTF strings, data as
-- a run of event records; optional trailing fields when bytes remain.

local PRAVEGA_PORT = 12345
local NAMES = @@NAMES@@
-- code -> the body's fields in wire order: {name, kind, optional}.
local LAYOUTS = @@LAYOUTS@@

local p = Proto("pravega", "Pravega wire commands")
local F = {
    type = ProtoField.string("pravega.type", "Type"),
    type_code = ProtoField.int32("pravega.type_code", "Type code"),
    length = ProtoField.int32("pravega.length", "Body length"),
    body = ProtoField.bytes("pravega.body", "Body"),
    trailing = ProtoField.bytes("pravega.trailing", "Trailing bytes"),
    padding = ProtoField.uint32("pravega.padding", "Padding"),
    data = ProtoField.bytes("pravega.data", "Data"),
    event = ProtoField.bytes("pravega.event", "Event record"),
    data_length = ProtoField.uint32("pravega.data.length", "Data length"),
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

-- Data: the event records it holds (without an earlier message's continuation).
local function records(tvb, tree, at, n)
    local i, stop, events = at, at + n, 0
    while i < stop do
        if stop - i < 8 or tvb(i + 4, 4):int() < 0 or i + 8 + tvb(i + 4, 4):int() > stop then
            tree:add(F.record, tvb(i, stop - i), "Fragment")
            return events
        end
        local code, len = tvb(i, 4):int(), tvb(i + 4, 4):int()
        local kind = code == 0 and "Event" or code == -2 and "PartialEvent" or code == -1 and "Padding" or "Command"
        if kind == "Event" then events = events + 1 end
        local r = tree:add(F.record, tvb(i, 8 + len), kind)
        if len > 0 then r:add(F.record_data, tvb(i + 8, len)) end
        i = i + 8 + len
    end
    return events
end

local function body(tvb, tree, code, at, n)
    local layout = LAYOUTS[code]
    local i, stop = at, at + n
    local function take(k) if i + k > stop then error(Short, 0) end local r = tvb(i, k); i = i + k; return r end
    local items = {}
    for _, fd in ipairs(layout) do
        local name, kind, optional = fd[1], fd[2], fd[3]
        if optional then
            local left = stop - i
            if (kind == "utf" and left == 0) or (kind == "i32" and left < 4) or (kind == "i64" and left < 8) then break end
        end
        if kind == "i32" then items[#items + 1] = { F[name], take(4), "int" }
        elseif kind == "i64" then items[#items + 1] = { F[name], take(8), "int64" }
        elseif kind == "bool" then items[#items + 1] = { F[name], take(1), "bool" }
        elseif kind == "uuid" then items[#items + 1] = { F[name], take(16), "guid" }
        elseif kind == "utf" then
            local len = take(2):uint()
            items[#items + 1] = { F[name], len > 0 and take(len) or tvb(i, 0), "utf" }
        elseif kind == "blob" then
            local len = take(4):int()
            if len < 0 then error(Short, 0) end
            items[#items + 1] = { F.data, len > 0 and take(len) or tvb(i, 0), "data" }
        elseif kind == "rest" or kind == "raw" then
            items[#items + 1] = { F.data, stop > i and take(stop - i) or tvb(i, 0), kind == "rest" and "data" or "raw" }
        else -- event: one record with its own header
            take(4)
            local len = take(4):int()
            if len < 0 then error(Short, 0) end
            i = i - 8
            items[#items + 1] = { F.event, take(8 + len), "raw" }
        end
    end
    for _, it in ipairs(items) do
        local f, r, how = it[1], it[2], it[3]
        if how == "int" then tree:add(f, r)
        elseif how == "int64" then tree:add(f, r)
        elseif how == "bool" then tree:add(f, r, r:uint() ~= 0)
        elseif how == "guid" then tree:add(f, r)
        elseif how == "utf" then tree:add(f, r, r:len() > 0 and r:raw() or "")
        elseif how == "raw" then tree:add(f, r)
        else
            local d = tree:add(f, r)
            d:add(F.data_length, r, r:len()):set_generated()
            if r:len() > 0 then records(tvb, d, r:offset(), r:len()) end
        end
    end
    if i < stop then tree:add(F.trailing, tvb(i, stop - i)) end
end

local function command(tvb, pinfo, tree, at, n)
    local code = tvb(at, 4):int()
    local name = NAMES[code] or "Unknown"
    local root = tree:add(p, tvb(at, 8 + n))
    root:add(F.type, tvb(at, 4), name)
    root:add(F.type_code, tvb(at, 4))
    root:add(F.length, tvb(at + 4, 4))
    if code == -1 then
        root:add(F.padding, tvb(at + 4, 4), n)
    elseif LAYOUTS[code] then
        local ok, e = pcall(body, tvb, root, code, at + 8, n)
        if not ok then
            if e ~= Short then error(e, 0) end
            root:add_proto_expert_info(E_BODY)
            root:add(F.body, tvb(at + 8, n))
        end
    elseif n > 0 then
        root:add(F.body, tvb(at + 8, n))
    end
    root:append_text(", " .. name)
    set_info(pinfo, "Pravega", name)
end

local function dissect(tvb, pinfo, tree)
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
        command(tvb, pinfo, tree, at, n)
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

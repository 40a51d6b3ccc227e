-- Lumberjack v1/v2 (ripple-lumberjack(7)): an ASCII version byte ("1" or
-- "2"), a type letter, then its body, big-endian: W window count, A ack
-- seq, D seq and key/value pairs, J seq and a JSON document, C zlib bytes
-- holding whole frames (inflated here with Wireshark's own zlib).

local LJ_PORT = 5044
local p = Proto("lumberjack", "Lumberjack")
local F = {
    version = ProtoField.uint8("lumberjack.version", "Version"),
    type = ProtoField.string("lumberjack.type", "Type"),
    count = ProtoField.uint32("lumberjack.count", "Window count"),
    seq = ProtoField.uint32("lumberjack.seq", "Sequence"),
    pairs = ProtoField.uint32("lumberjack.pairs", "Pairs"),
    pair = ProtoField.none("lumberjack.pair", "Pair"),
    key = ProtoField.string("lumberjack.key", "Key"),
    value = ProtoField.string("lumberjack.value", "Value"),
    length = ProtoField.uint32("lumberjack.length", "Length"),
    payload = ProtoField.bytes("lumberjack.payload", "Payload"),
    inflated_size = ProtoField.uint32("lumberjack.inflated_size", "Inflated size"),
    in_compressed = ProtoField.uint32("lumberjack.in_compressed", "Inside the compressed frame at stream offset"),
    batch = ProtoField.uint32("lumberjack.batch", "Window number in the stream"),
    previous_count = ProtoField.uint32("lumberjack.previous_count", "Count of the window before"),
    keepalive = ProtoField.bool("lumberjack.keepalive", "Keepalive (ack 0)"),
    frames = ProtoField.uint32("lumberjack.frames", "Frames directly inside"),
}
set_fields(p, F)
local E = {
    bad = ProtoExpert.new("lumberjack.bad_frame", "Not a Lumberjack frame", expert.group.MALFORMED, expert.severity.WARN),
    zlib = ProtoExpert.new("lumberjack.bad_zlib", "Compressed frame does not inflate", expert.group.MALFORMED, expert.severity.WARN),
}
p.experts = { E.bad, E.zlib }

local NAMES = { W = "Window", A = "Ack", D = "Data", J = "Json", C = "Compressed" }
local NeedMore, Bad = {}, {}
local json_dissector = Dissector.get("json")

-- The end of the frame at `at` (its type checked), or an error NeedMore/Bad.
local function frame_end(tvb, at, stop)
    local function need(n) if at + n > stop then error(NeedMore, 0) end end
    need(2)
    local v, t = tvb(at, 1):uint(), string.char(tvb(at + 1, 1):uint())
    if (v ~= 0x31 and v ~= 0x32) or not NAMES[t] then error(Bad, 0) end
    if t == "W" or t == "A" then need(6); return at + 6 end
    if t == "C" then need(6); local n = tvb(at + 2, 4):uint(); need(6 + n); return at + 6 + n end
    need(10)
    if t == "J" then local n = tvb(at + 6, 4):uint(); need(10 + n); return at + 10 + n end
    local i = at + 10
    for _ = 1, tvb(at + 6, 4):uint() do
        for _ = 1, 2 do
            if i + 4 > stop then error(NeedMore, 0) end
            i = i + 4 + tvb(i, 4):uint()
            if i > stop then error(NeedMore, 0) end
        end
    end
    return i
end

local walk
-- By direction: the windows so far, the last one's count, the bytes read.
local windows, last_window, consumed = {}, {}, {}

-- ---------------------------------------------------------------- the summary
-- What ripple's table shows (protocols/lumberjack/view.py summary_of).

local WIDTH = 100
local chars = text_chars

local function short(s) return table.concat(chars(s:sub(1, WIDTH + 1))) end

local function cut(text)
    local cs = chars(text)
    if #cs <= WIDTH then return text end
    return table.concat(cs, "", 1, WIDTH - 3) .. "..."
end

local function summary(tvb, at, t, dir, extra)
    local text
    if t == "W" then
        local n, prev = tvb(at + 2, 4):uint(), extra
        text = "window " .. n .. ((prev ~= nil and prev ~= n) and (" (was " .. prev .. ")") or "")
    elseif t == "A" then
        local n = tvb(at + 2, 4):uint()
        text = "ack " .. n .. (n == 0 and " (keepalive)" or "")
    elseif t == "J" then
        local n = tvb(at + 6, 4):uint()
        text = "#" .. tvb(at + 2, 4):uint() .. " " .. (n > 0 and short(tvb(at + 10, n):raw()) or "(empty)")
    elseif t == "D" then
        local pairs_, i = {}, at + 10
        for _ = 1, tvb(at + 6, 4):uint() do
            local kn = tvb(i, 4):uint()
            local vn = tvb(i + 4 + kn, 4):uint()
            local k = kn > 0 and tvb(i + 4, kn):raw() or ""
            local v = vn > 0 and tvb(i + 8 + kn, vn):raw() or ""
            pairs_[#pairs_ + 1] = short(k) .. "=" .. short(v)
            i = i + 8 + kn + vn
        end
        text = "#" .. tvb(at + 2, 4):uint() .. " " .. (#pairs_ > 0 and table.concat(pairs_, " ") or "(no pairs)")
    else
        text = "zlib " .. tvb(at + 2, 4):uint() .. " bytes"
        if extra then text = text .. " -> " .. extra[1] .. " bytes, " .. extra[2] .. " frames" end
    end
    return text
end

-- One whole frame at `at`, its row added to infos (a C frame's, then
-- those of the frames it holds); top: the stream offset of the outermost
-- C frame it came out of, when it did.
local function frame(tvb, pinfo, tree, at, stop, top, dir, infos)
    local t = string.char(tvb(at + 1, 1):uint())
    local name = NAMES[t]
    local root = tree:add(p, tvb(at, stop - at))
    root:add(F.version, tvb(at, 1), tvb(at, 1):uint() - 0x30)
    root:add(F.type, tvb(at + 1, 1), name)
    if top then root:add(F.in_compressed, tvb(at, stop - at), top):set_generated() end
    local slot = #infos + 1
    infos[slot] = false
    local extra
    if t == "W" then
        root:add(F.count, tvb(at + 2, 4))
        windows[dir] = (windows[dir] or 0) + 1
        root:add(F.batch, tvb(at, stop - at), windows[dir]):set_generated()
        extra = last_window[dir]
        if extra then root:add(F.previous_count, tvb(at, stop - at), extra):set_generated() end
        last_window[dir] = tvb(at + 2, 4):uint()
    elseif t == "A" then
        root:add(F.seq, tvb(at + 2, 4))
        root:add(F.keepalive, tvb(at + 2, 4), tvb(at + 2, 4):uint() == 0):set_generated()
    elseif t == "J" then
        root:add(F.seq, tvb(at + 2, 4))
        local n = tvb(at + 6, 4):uint()
        root:add(F.length, tvb(at + 6, 4))
        if n > 0 then
            root:add(F.payload, tvb(at + 10, n))
            if json_dissector then call_keeping_columns(json_dissector, tvb(at + 10, n):tvb(), pinfo, root) end
        end
    elseif t == "D" then
        root:add(F.seq, tvb(at + 2, 4))
        root:add(F.pairs, tvb(at + 6, 4))
        local i = at + 10
        for _ = 1, tvb(at + 6, 4):uint() do
            local kn = tvb(i, 4):uint()
            local vn = tvb(i + 4 + kn, 4):uint()
            local pair = root:add(F.pair, tvb(i, 8 + kn + vn))
            local k = kn > 0 and tvb(i + 4, kn):raw() or ""
            local v = vn > 0 and tvb(i + 8 + kn, vn):raw() or ""
            pair:add(F.key, tvb(i + 4, kn), k)
            pair:add(F.value, tvb(i + 8 + kn, vn), v)
            pair:set_text(k .. ": " .. v)
            i = i + 8 + kn + vn
        end
    else -- C
        local n = tvb(at + 2, 4):uint()
        root:add(F.length, tvb(at + 2, 4))
        local inflated = n > 0 and tvb(at + 6, n):uncompress("Inflated") or nil
        if inflated == nil then
            root:add_proto_expert_info(E.zlib)
        else
            local itvb = inflated:tvb()
            root:add(F.inflated_size, tvb(at + 2, 4), itvb:len()):set_generated()
            local count = walk(itvb, pinfo, root, top or ((consumed[dir] or 0) + at), dir, infos)
            extra = { itvb:len(), count }
            root:add(F.frames, tvb(at, stop - at), count):set_generated()
        end
    end
    root:append_text(", " .. name)
    local text = summary(tvb, at, t, dir, extra)
    if top then text = "in C@" .. top .. ": " .. text end
    infos[slot] = name .. " " .. cut(text)
end

-- Every whole frame in tvb, their rows added to infos: (how many, where
-- the next one starts, whether it needs more bytes).
walk = function(tvb, pinfo, tree, top, dir, infos)
    local at, len, count = 0, tvb:len(), 0
    while at < len do
        local ok, stop = pcall(frame_end, tvb, at, len)
        if not ok and stop == NeedMore then return count, at, true end
        if not ok and stop ~= Bad then error(stop, 0) end
        if not ok then
            local root = tree:add(p, tvb(at, len - at))
            root:add_proto_expert_info(E.bad)
            infos[#infos + 1] = "not Lumberjack: " .. (len - at) .. " bytes"
            return count, len, false
        end
        frame(tvb, pinfo, tree, at, stop, top, dir, infos)
        count = count + 1
        at = stop
    end
    return count, at, false
end

local function dissect(tvb, pinfo, tree)
    local dir = tostring(pinfo.src) .. ":" .. pinfo.src_port .. ">" .. tostring(pinfo.dst) .. ":" .. pinfo.dst_port
    local infos = {}
    local _, at, more = walk(tvb, pinfo, tree, nil, dir, infos)
    consumed[dir] = (consumed[dir] or 0) + at
    if more then pinfo.desegment_offset, pinfo.desegment_len = at, DESEGMENT_ONE_MORE_SEGMENT end
    if #infos > 0 then
        set_info(pinfo, "Lumberjack", table.concat(infos, " | "))
    end
    return tvb:len()
end
p.dissector = dissect

-- A connection whose first frame is a window: "1W" or "2W" and a count.
local function looks(tvb)
    if tvb:len() < 6 then return false end
    local v, t = tvb(0, 1):uint(), tvb(1, 1):uint()
    return not ((v ~= 0x31 and v ~= 0x32) or t ~= 0x57 or tvb(2, 4):uint() > 0xFFFFFF)
end

register_tcp(p, LJ_PORT, "Lumberjack", dissect, looks)

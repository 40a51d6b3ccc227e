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
    in_compressed = ProtoField.bool("lumberjack.in_compressed", "Inside a compressed frame"),
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

local dissect_frames

-- One whole frame at `at`; nested: the offset of the C frame it came out of.
local function frame(tvb, pinfo, tree, at, stop, nested)
    local t = string.char(tvb(at + 1, 1):uint())
    local name = NAMES[t]
    local root = tree:add(p, tvb(at, stop - at))
    root:add(F.version, tvb(at, 1), tvb(at, 1):uint() - 0x30)
    root:add(F.type, tvb(at + 1, 1), name)
    if nested then root:add(F.in_compressed, tvb(at, stop - at), true):set_generated() end
    local info = name
    if t == "W" then
        root:add(F.count, tvb(at + 2, 4))
        info = info .. " " .. tvb(at + 2, 4):uint()
    elseif t == "A" then
        root:add(F.seq, tvb(at + 2, 4))
        info = info .. " " .. tvb(at + 2, 4):uint()
    elseif t == "J" then
        root:add(F.seq, tvb(at + 2, 4))
        local n = tvb(at + 6, 4):uint()
        root:add(F.length, tvb(at + 6, 4))
        if n > 0 then
            root:add(F.payload, tvb(at + 10, n))
            if json_dissector then json_dissector:call(tvb(at + 10, n):tvb(), pinfo, root) end
        end
        info = info .. " " .. tvb(at + 2, 4):uint()
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
        info = info .. " " .. tvb(at + 2, 4):uint()
    else -- C
        local n = tvb(at + 2, 4):uint()
        root:add(F.length, tvb(at + 2, 4))
        local inflated = n > 0 and tvb(at + 6, n):uncompress("Inflated") or nil
        if inflated == nil then
            root:add_proto_expert_info(E.zlib)
        else
            local itvb = inflated:tvb()
            root:add(F.inflated_size, tvb(at + 2, 4), itvb:len()):set_generated()
            local frames = dissect_frames(itvb, pinfo, root, true)
            info = info .. " [" .. frames .. "]"
        end
    end
    root:append_text(", " .. name)
    return info
end

-- Every whole frame in tvb: (count, where the next one starts, bytes it needs).
local function walk(tvb, pinfo, tree, nested)
    local at, len, infos = 0, tvb:len(), {}
    while at < len do
        local ok, stop = pcall(frame_end, tvb, at, len)
        if not ok and stop == NeedMore then return infos, at, true end
        if not ok and stop ~= Bad then error(stop, 0) end
        if not ok then
            local root = tree:add(p, tvb(at, len - at))
            root:add_proto_expert_info(E.bad)
            infos[#infos + 1] = "not Lumberjack: " .. (len - at) .. " bytes"
            return infos, len, false
        end
        infos[#infos + 1] = frame(tvb, pinfo, tree, at, stop, nested)
        at = stop
    end
    return infos, at, false
end

dissect_frames = function(tvb, pinfo, tree, nested)
    local infos = walk(tvb, pinfo, tree, nested)
    return table.concat(infos, " | ")
end

local function dissect(tvb, pinfo, tree)
    local infos, at, more = walk(tvb, pinfo, tree, false)
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

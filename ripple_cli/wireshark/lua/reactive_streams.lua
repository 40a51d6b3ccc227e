-- The Reactive Streams network protocol with ripple's byte convention
-- (ripple-reactive-streams(7)): a one-byte type code, then the fields, no
-- length header; Ids, counts and demands are unsigned LEB128, strings and
-- bytes length-prefixed.  An OnNext's element is length-prefixed when its
-- subscription's elementSize (from the OnSubscribe before it, in the same
-- direction) is 0, else exactly elementSize bytes.

local RS_PORT = 7373
local p = Proto("rs", "Reactive Streams")
local F = {
    type = ProtoField.string("rs.type", "Type"),
    code = ProtoField.uint8("rs.code", "Type code"),
    version = ProtoField.uint8("rs.version", "Version"),
    extension_count = ProtoField.uint64("rs.extension_count", "Extension count"),
    extensions = ProtoField.uint64("rs.extensions", "Extension"), -- one item an Id, as ripple's list `extensions`
    publisher = ProtoField.string("rs.publisher", "Publisher"),
    subscriber = ProtoField.uint64("rs.subscriber", "Subscriber"),
    initial_demand = ProtoField.uint64("rs.initial_demand", "Initial demand"),
    demand = ProtoField.uint64("rs.demand", "Demand"),
    element_size = ProtoField.uint64("rs.element_size", "Element size"),
    element = ProtoField.bytes("rs.element", "Element"),
    count = ProtoField.uint64("rs.count", "Count"),
    element_id = ProtoField.uint64("rs.element_id", "Element id"),
    data = ProtoField.bytes("rs.data", "Data"),
    error = ProtoField.string("rs.error", "Error"),
    reason = ProtoField.string("rs.reason", "Reason"),
    message = ProtoField.string("rs.message", "Message"),
    parts = ProtoField.uint32("rs.parts", "Parts joined"),
}
set_fields(p, F)
local E_RAW = ProtoExpert.new("rs.raw", "Not a message: the rest of the stream is raw", expert.group.MALFORMED, expert.severity.WARN)
p.experts = { E_RAW }

local NAMES = { "ClientHello", "ServerHello", "Subscribe", "Request", "Cancel", "OnSubscribe", "OnNext",
    "OnComplete", "OnError", "OnNextPacked", "OnNextPart", "OnNextLastPart", "Goodbye", "GoodbyeAck" }
-- The fields of each type in wire order (ripple's wire.py LAYOUTS).
local LAYOUT = {
    { "version", "ids" }, { "version", "ids" }, { "publisher", "subscriber", "initial_demand" },
    { "subscriber", "demand" }, { "subscriber" }, { "subscriber", "element_size" },
    { "subscriber", "element" }, { "subscriber" }, { "subscriber", "error" },
    { "subscriber", "packed" }, { "subscriber", "element_id", "data" }, { "subscriber", "element_id", "data" },
    { "reason" }, { "message" },
}
local PREFIXED = { publisher = true, data = true, error = true, reason = true, message = true }

local NeedMore = {}
local Lost = {}

-- Unsigned LEB128 at i: (value as UInt64, next position).
local function leb(tvb, i, stop)
    local v, shift, at = UInt64(0), 0, i
    while true do
        if i >= stop then error(NeedMore, 0) end
        if i - at >= 10 then error(Lost, 0) end
        local b = tvb(i, 1):uint()
        v = v:bor(UInt64(bit32.band(b, 0x7F)):lshift(shift))
        shift, i = shift + 7, i + 1
        if b < 0x80 then return v, i end
    end
end

local sizes = {} -- direction -> subscriber -> elementSize, as the OnSubscribes said

-- One message at `at`: its items {field, start, length, value} and its end.
local function parse(tvb, at, stop, dir)
    local code = tvb(at, 1):uint()
    local layout = LAYOUT[code]
    if not layout then error(Lost, 0) end
    local items, i, sub = { { F.code, at, 1, code } }, at + 1, nil
    local function need(n) if i + n > stop then error(NeedMore, 0) end end
    for _, name in ipairs(layout) do
        if name == "version" then
            need(1)
            items[#items + 1] = { F.version, i, 1, tvb(i, 1):uint() }
            i = i + 1
        elseif name == "ids" then
            local n, j = leb(tvb, i, stop)
            items[#items + 1] = { F.extension_count, i, j - i, n }
            i = j
            for _ = 1, n:tonumber() do
                local v, k = leb(tvb, i, stop)
                items[#items + 1] = { F.extensions, i, k - i, v }
                i = k
            end
        elseif PREFIXED[name] then
            local n, j = leb(tvb, i, stop)
            n = n:tonumber()
            i = j
            need(n)
            local f = F[name]
            items[#items + 1] = { f, i, n, (f == F.data) and nil or (n > 0 and tvb(i, n):raw() or "") }
            i = i + n
        elseif name == "element" or name == "packed" then
            local size = (sizes[dir] or {})[tostring(sub)] or 0
            local count = 1
            if name == "packed" then
                local c, j = leb(tvb, i, stop)
                items[#items + 1] = { F.element_size, i, 0, UInt64(size) }
                items[#items + 1] = { F.count, i, j - i, c }
                i, count = j, c:tonumber()
            else
                items[#items + 1] = { F.element_size, i, 0, UInt64(size) }
            end
            for _ = 1, count do
                local n = size
                if size == 0 then
                    local m, j = leb(tvb, i, stop)
                    n, i = m:tonumber(), j
                end
                need(n)
                items[#items + 1] = { F.element, i, n }
                i = i + n
            end
        else
            local v, j = leb(tvb, i, stop)
            if name == "subscriber" then sub = v end
            items[#items + 1] = { F[name], i, j - i, v }
            i = j
        end
    end
    if code == 6 then -- OnSubscribe: the element size of this subscriber's OnNexts
        sizes[dir] = sizes[dir] or {}
        sizes[dir][tostring(sub)] = items[#items][4]:tonumber()
    end
    return NAMES[code], items, i, sub
end

-- ---------------------------------------------------------------- the summary
-- What ripple's table shows (protocols/reactive_streams/text.py summary).

local FNAME = {}
for name, f in pairs(F) do FNAME[f] = name end
local LONG_MAX = UInt64(0xFFFFFFFF, 0x7FFFFFFF)
local parts = {} -- direction -> "subscriber/element id" -> {parts, bytes}: the parts of a split element

-- An atom as sexplib writes it (quoted and escaped when it must be).
local function atom_text(s)
    if s ~= "" and not s:find('[%z\001-\032"();\\\127-\255]') and not s:find("#|", 1, true)
        and not s:find("|#", 1, true) then
        return s
    end
    local esc = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r", ["\b"] = "\\b" }
    return '"' .. s:gsub("[%z\001-\031\"\\\127-\255]", function(c)
        return esc[c] or string.format("\\%03d", c:byte())
    end) .. '"'
end

-- The head of an atom, cut for the summary column.
local function short(s)
    local t = atom_text(s:sub(1, 40))
    if #t <= 40 then return t end
    return t:sub(1, 39) .. "\226\128\166"
end

local function demand(n) return n >= LONG_MAX and "unbounded" or tostring(n) end

local function summary(tvb, name, items, dir, root)
    local v, elements = {}, {}
    for _, it in ipairs(items) do
        local field = FNAME[it[1]]
        if field == "element" or field == "data" then
            local bytes = it[3] > 0 and tvb(it[2], it[3]):raw() or ""
            if field == "element" then elements[#elements + 1] = bytes else v.data = bytes end
        elseif field == "extensions" then
            v.ids = (v.ids and v.ids .. "," or "") .. tostring(it[4])
        else
            v[field] = it[4]
        end
    end
    local who = v.subscriber and ("#" .. tostring(v.subscriber)) or ""
    if name == "ClientHello" or name == "ServerHello" then
        return "version " .. v.version .. " extensions " .. (v.ids or "none")
    elseif name == "Subscribe" then
        return who .. " to " .. short(v.publisher) .. " initial demand " .. demand(v.initial_demand)
    elseif name == "Request" then
        return who .. " +" .. demand(v.demand)
    elseif name == "OnSubscribe" then
        local size = v.element_size:tonumber()
        return who .. (size > 0 and (" elements of " .. size .. " bytes") or " elements length-prefixed")
    elseif name == "OnNext" then
        return who .. " " .. #elements[1] .. " bytes " .. short(elements[1])
    elseif name == "OnNextPacked" then
        return who .. " " .. tostring(v.count) .. " x " .. tostring(v.element_size) .. " bytes"
    elseif name == "OnNextPart" or name == "OnNextLastPart" then
        local key = tostring(v.subscriber) .. "/" .. tostring(v.element_id)
        parts[dir] = parts[dir] or {}
        local so_far = parts[dir][key]
        local id = " element " .. tostring(v.element_id)
        if name == "OnNextPart" then
            parts[dir][key] = { (so_far and so_far[1] or 0) + 1, (so_far and so_far[2] or 0) + #v.data }
            return who .. id .. " part of " .. #v.data .. " bytes"
        end
        parts[dir][key] = nil
        local text = who .. id .. " last part of " .. #v.data .. " bytes"
        if so_far then
            root:add(F.parts, tvb(items[1][2], 1), so_far[1] + 1):set_generated()
            text = text .. ": " .. (so_far[1] + 1) .. " parts, " .. (so_far[2] + #v.data) .. " bytes joined"
        end
        return text
    elseif name == "OnError" then
        return who .. " " .. short(v.error)
    elseif name == "Goodbye" then
        return short(v.reason)
    elseif name == "GoodbyeAck" then
        return short(v.message)
    end
    return who -- Cancel, OnComplete
end

local function dissect(tvb, pinfo, tree)
    local dir = tostring(pinfo.src) .. ":" .. pinfo.src_port .. ">" .. tostring(pinfo.dst) .. ":" .. pinfo.dst_port
    local at, len = 0, tvb:len()
    while at < len do
        local ok, name, items, stop, sub = pcall(parse, tvb, at, len, dir)
        if not ok and name == NeedMore then
            pinfo.desegment_offset, pinfo.desegment_len = at, DESEGMENT_ONE_MORE_SEGMENT
            return len
        end
        if not ok and name ~= Lost then error(name, 0) end
        local root
        if not ok then
            root = tree:add(p, tvb(at, len - at))
            root:add(F.type, tvb(at, len - at), "Raw")
            root:add(F.data, tvb(at, len - at))
            root:add_proto_expert_info(E_RAW)
            set_info(pinfo, "RS", "Raw " .. (len - at) .. " bytes not read as messages")
            return len
        end
        root = tree:add(p, tvb(at, stop - at))
        root:add(F.type, tvb(at, 1), name)
        for _, it in ipairs(items) do
            local r = tvb(it[2], it[3])
            if it[4] == nil then root:add(it[1], r) else root:add(it[1], r, it[4]) end
        end
        root:append_text(", " .. name)
        local line = summary(tvb, name, items, dir, root)
        set_info(pinfo, "RS", line == "" and name or (name .. " " .. line))
        at = stop
    end
    return len
end
p.dissector = dissect

register_tcp(p, RS_PORT, "Reactive Streams", dissect)
-- No heuristic: a one-byte type code and no magic would claim too much.

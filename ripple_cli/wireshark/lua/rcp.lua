-- rstmdb RCP (ripple-rcp(7)): binary frames (an 18-byte big-endian header:
-- "RCPX", version, flags, header_len, payload_len, CRC-32C of the payload)
-- holding JSON, or JSON lines once a HELLO negotiated the jsonl wire mode.

local RCP_PORT = 7401
local p = Proto("rcp", "rstmdb RCP")
local F = {
    magic = ProtoField.string("rcp.magic", "Magic"),
    version = ProtoField.uint16("rcp.version", "Version"),
    flags = ProtoField.uint16("rcp.flags", "Flags", base.HEX),
    crc_present = ProtoField.bool("rcp.flags.crc_present", "CRC_PRESENT", 16, nil, 0x0001),
    compressed = ProtoField.bool("rcp.flags.compressed", "COMPRESSED", 16, nil, 0x0002),
    stream = ProtoField.bool("rcp.flags.stream", "STREAM", 16, nil, 0x0004),
    end_stream = ProtoField.bool("rcp.flags.end_stream", "END_STREAM", 16, nil, 0x0008),
    header_len = ProtoField.uint16("rcp.header_len", "Header extension length"),
    payload_len = ProtoField.uint32("rcp.payload_len", "Payload length"),
    crc = ProtoField.uint32("rcp.crc", "CRC-32C", base.HEX),
    crc_status = ProtoField.uint8("rcp.crc.status", "CRC status", base.DEC,
        { [0] = "Bad", [1] = "Good", [2] = "Unverified" }),
    crc_calc = ProtoField.uint32("rcp.crc.calculated", "Calculated CRC-32C", base.HEX),
    crc_ok = ProtoField.bool("rcp.crc_ok", "CRC matches"),
    flag_names = ProtoField.string("rcp.flag_names", "Flag set"),
    extension = ProtoField.bytes("rcp.extension", "Header extension"),
    wire = ProtoField.string("rcp.wire", "Wire"),
    type = ProtoField.string("rcp.type", "Type"),
    kind = ProtoField.string("rcp.kind", "Kind"),
    id = ProtoField.string("rcp.id", "Id"),
    op = ProtoField.string("rcp.op", "Op"),
    status = ProtoField.string("rcp.status", "Status"),
    error_code = ProtoField.string("rcp.error_code", "Error code"),
    payload = ProtoField.string("rcp.payload", "Payload"),
}
local E = {
    crc_bad = ProtoExpert.new("rcp.crc.bad", "Bad CRC-32C", expert.group.CHECKSUM, expert.severity.WARN),
    bad_json = ProtoExpert.new("rcp.bad_json", "Payload is not a JSON message", expert.group.MALFORMED, expert.severity.WARN),
}
set_fields(p, F)
p.experts = { E.crc_bad, E.bad_json }

local TYPE_OF_KIND = { request = "Request", response = "Response", event = "Event" }
local json_dissector = Dissector.get("json")

-- ---------------------------------------------------------------- the summary
-- What ripple's table shows (protocols/rcp/payload.py summary).

local function short(v, limit)
    limit = limit or 40
    return cut_chars(type(v) == "string" and v or json_dumps(v == nil and json_null or v), limit)
end

-- The first three members of an object as k=v.
local function members(obj)
    local out = {}
    for k = 1, math.min(3, #json_keys[obj]) do
        local key = json_keys[obj][k]
        out[k] = key .. "=" .. short(obj[key], 24)
    end
    return table.concat(out, " ")
end

local function json_type(v)
    if v == json_null then return "null" end
    if type(v) == "boolean" then return "a boolean" end
    if json_is_number(v) then return "a number" end
    if type(v) == "string" then return "a string" end
    return json_is_object(v) and "an object" or "an array"
end

local function summary(v, kind, n)
    if v == nil then return n .. " bytes, not JSON" end
    if kind == nil then return json_type(v) .. ", not a message" end
    if kind == "request" then
        local text = short(v.op) .. " id=" .. short(v.id)
        if json_is_object(v.params) and #json_keys[v.params] > 0 then text = text .. " " .. members(v.params) end
        return text
    end
    if kind == "response" then
        local text = "id=" .. short(v.id) .. " " .. short(v.status)
        if json_is_object(v.error) then
            text = text .. " " .. short(v.error.code) .. ": " .. short(v.error.message, 60)
        elseif json_is_object(v.result) then
            text = text .. " " .. members(v.result)
        end
        return text
    end
    return short(v.instance_id) .. " " .. short(v.from_state) .. " -> " .. short(v.to_state) .. " on "
        .. short(v.event) .. " (subscription " .. short(v.subscription_id) .. ")"
end

-- The JSON of one message: its members as fields, the JSON tree beneath;
-- returns its kind and its summary.
local function message(tvb, pinfo, tree, at, n)
    local text = n > 0 and tvb(at, n):raw() or ""
    local v = json_parse(text)
    local kind = json_is_object(v) and type(v.type) == "string" and TYPE_OF_KIND[v.type] and v.type or nil
    if kind == nil then
        tree:add_proto_expert_info(E.bad_json)
        if v == nil then tree:add(F.payload, tvb(at, math.max(n, 0)), text) end -- as ripple's `payload`: not JSON
        return nil, summary(v, nil, n)
    end
    tree:add(F.kind, tvb(at, n), kind)
    for _, name in ipairs({ "id", "op", "status" }) do
        if type(v[name]) == "string" or json_is_number(v[name]) then
            tree:add(F[name], tvb(at, n), tostring(v[name]))
        end
    end
    if json_is_object(v.error) and type(v.error.code) == "string" then
        tree:add(F.error_code, tvb(at, n), v.error.code)
    end
    if n > 0 and json_dissector then call_keeping_columns(json_dissector, tvb(at, n):tvb(), pinfo, tree) end
    return kind, summary(v, kind, n)
end

local function frame(tvb, pinfo, tree, at)
    local hl, pl = tvb(at + 8, 2):uint(), tvb(at + 10, 4):uint()
    local size = 18 + hl + pl
    local root = tree:add(p, tvb(at, size))
    root:add(F.wire, tvb(at, 4), "frame")
    root:add(F.magic, tvb(at, 4))
    root:add(F.version, tvb(at + 4, 2))
    local flags = tvb(at + 6, 2):uint()
    local fl = root:add(F.flags, tvb(at + 6, 2))
    for k, b in ipairs({ "crc_present", "compressed", "stream", "end_stream" }) do
        fl:add(F[b], tvb(at + 6, 2))
        if bit32.band(flags, bit32.lshift(1, k - 1)) ~= 0 then
            fl:add(F.flag_names, tvb(at + 6, 2), b:upper()):set_generated()
        end
    end
    root:add(F.header_len, tvb(at + 8, 2))
    root:add(F.payload_len, tvb(at + 10, 4))
    local want = tvb(at + 14, 4):uint()
    local crc = root:add(F.crc, tvb(at + 14, 4))
    local pat = at + 18 + hl
    if bit32.band(flags, 1) == 1 then
        local got = crc32c(pl > 0 and tvb(pat, pl):raw() or "")
        if got == want then
            crc:append_text(" [correct]")
            crc:add(F.crc_status, tvb(at + 14, 4), 1):set_generated()
            crc:add(F.crc_ok, tvb(at + 14, 4), true):set_generated()
        else
            crc:append_text(string.format(" [incorrect, should be 0x%08x]", got))
            crc:add(F.crc_status, tvb(at + 14, 4), 0):set_generated()
            crc:add(F.crc_ok, tvb(at + 14, 4), false):set_generated()
            crc:add(F.crc_calc, tvb(at + 14, 4), got):set_generated()
            crc:add_proto_expert_info(E.crc_bad, string.format("Bad CRC-32C: 0x%08x, should be 0x%08x", want, got))
        end
    else
        crc:add(F.crc_status, tvb(at + 14, 4), 2):set_generated()
    end
    if hl > 0 then root:add(F.extension, tvb(at + 18, hl)) end
    local kind, info
    if bit32.band(flags, 2) == 2 then
        kind, info = nil, pl .. " bytes, compressed"
    else
        kind, info = message(tvb, pinfo, root, pat, pl)
    end
    local tname = kind and TYPE_OF_KIND[kind] or "Frame"
    root:add(F.type, tvb(at, 4), tname)
    root:append_text(", " .. tname)
    -- The flags worth showing (ripple's stream.py): all but CRC_PRESENT, then reserved bits.
    local shown = {}
    for bit, name in pairs({ [2] = "COMPRESSED", [4] = "STREAM", [8] = "END_STREAM" }) do
        if bit32.band(flags, bit) ~= 0 then shown[#shown + 1] = { bit, name } end
    end
    table.sort(shown, function(a, b) return a[1] < b[1] end)
    for k, x in ipairs(shown) do shown[k] = x[2] end
    if bit32.band(flags, 0xFFF0) ~= 0 then shown[#shown + 1] = string.format("0x%04x", bit32.band(flags, 0xFFF0)) end
    if #shown > 0 then info = info .. " [" .. table.concat(shown, " ") .. "]" end
    set_info(pinfo, "RCP", tname .. " " .. info)
    return size
end

local function line(tvb, pinfo, tree, at, n)
    local root = tree:add(p, tvb(at, n + 1))
    root:add(F.wire, tvb(at, n + 1), "jsonl")
    root:add(F.payload_len, tvb(at, n + 1), n)
    root:add(F.type, tvb(at, n + 1), "JsonLine")
    local _, info = message(tvb, pinfo, root, at, n)
    root:append_text(", JsonLine")
    set_info(pinfo, "RCP", "JsonLine jsonl " .. info)
end

local function dissect(tvb, pinfo, tree)
    local at, len = 0, tvb:len()
    while at < len do
        local avail = len - at
        local head = tvb(at, math.min(4, avail)):raw()
        if ("RCPX"):sub(1, #head) == head then
            if avail < 18 then
                pinfo.desegment_offset, pinfo.desegment_len = at, DESEGMENT_ONE_MORE_SEGMENT
                return len
            end
            local size = 18 + tvb(at + 8, 2):uint() + tvb(at + 10, 4):uint()
            if avail < size then
                pinfo.desegment_offset, pinfo.desegment_len = at, size - avail
                return len
            end
            at = at + frame(tvb, pinfo, tree, at)
        else
            local nl = tvb(at, avail):raw():find("\n", 1, true)
            if not nl then
                pinfo.desegment_offset, pinfo.desegment_len = at, DESEGMENT_ONE_MORE_SEGMENT
                return len
            end
            line(tvb, pinfo, tree, at, nl - 1)
            at = at + nl
        end
    end
    return len
end
p.dissector = dissect

local function looks(tvb)
    return not (tvb:len() < 6 or tvb(0, 4):raw() ~= "RCPX" or tvb(4, 2):uint() ~= 1)
end

register_tcp(p, RCP_PORT, "RCP", dissect, looks)

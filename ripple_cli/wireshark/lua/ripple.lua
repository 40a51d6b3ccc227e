-- Ripple, a Wireshark dissector written by `ripple wireshark` (ripple-wireshark(1)).
-- The envelope is ripple_wire.ml's: "RIPP", version, type, flags, seq (int64),
-- time_ns (int64), a 32-byte fingerprint, the payload length (int32), the
-- payload (bin_prot), then CRC-32C of all before it.

local RIPPLE_PORT = @@PORT@@

-- Schemas baked in when this file was written: fingerprint -> Schema.t,
-- types as {k = "Int" | "Int32" | "Int64" | "Float" | "Bool" | "String" |
-- "Option" (t) | "List" (t) | "Record" (fields: {name, t}) | "Enum" (names)}.
local SCHEMAS = @@SCHEMAS@@
-- Their fingerprints in the order ripple wrote them (the --schemas, then the
-- inputs' Handshakes): the order their fields are named in (pairs() has none).
local SCHEMA_ORDER = @@ORDER@@

local HEADER, OVERHEAD = 59, 63
local TYPE_NAMES = {
    [0] = "Handshake", [1] = "Delta", [2] = "Checkpoint_request",
    [3] = "Checkpoint_ack", [4] = "Heartbeat", [5] = "Schema_negotiation",
}

local p = Proto("ripple", "Ripple")
local F = {}
local function field(name, pf) F[name] = pf; return pf end

field("magic", ProtoField.string("ripple.magic", "Magic"))
field("version", ProtoField.uint8("ripple.version", "Version"))
field("tag", ProtoField.uint8("ripple.tag", "Type tag"))
field("type", ProtoField.string("ripple.type", "Type"))
field("flags", ProtoField.uint8("ripple.flags", "Flags", base.HEX))
field("seq", ProtoField.int64("ripple.seq", "Sequence number"))
field("time", ProtoField.absolute_time("ripple.time", "Event time", base.UTC))
field("time_ns", ProtoField.int64("ripple.time_ns", "Event time (ns since the epoch)"))
field("schema", ProtoField.string("ripple.schema", "Schema fingerprint"))
field("length", ProtoField.int32("ripple.length", "Payload length"))
field("size", ProtoField.uint32("ripple.size", "Envelope size"))
field("msg", ProtoField.none("ripple.msg", "Message"))
field("crc", ProtoField.uint32("ripple.crc", "CRC-32C", base.HEX))
field("crc_status", ProtoField.uint8("ripple.crc.status", "CRC status", base.DEC,
    { [0] = "Bad", [1] = "Good", [2] = "Unverified" }))
field("crc_calc", ProtoField.uint32("ripple.crc.calculated", "Calculated CRC-32C", base.HEX))
-- The message fields, named as `ripple decode -Y` names them.
field("output", ProtoField.string("ripple.output", "Source output"))
field("key", ProtoField.string("ripple.key", "Key"))
field("key_bytes", ProtoField.bytes("ripple.key_bytes", "Key bytes"))
field("delta", ProtoField.string("ripple.delta", "Delta"))
field("delta_bytes", ProtoField.bytes("ripple.delta_bytes", "Delta bytes"))
field("update", ProtoField.string("ripple.delta.update", "Update"))
field("sequence_no", ProtoField.int64("ripple.sequence_no", "Sequence no"))
field("watermark_ns", ProtoField.int64("ripple.watermark_ns", "Watermark (ns)"))
field("worker", ProtoField.string("ripple.worker", "Worker"))
field("protocol_version", ProtoField.int64("ripple.protocol_version", "Protocol version"))
field("hs_output", ProtoField.string("ripple.handshake.output", "Output"))
field("hs_schema", ProtoField.string("ripple.handshake.schema", "Schema"))
field("hs_schema_name", ProtoField.string("ripple.handshake.schema.name", "Name"))
field("hs_schema_version", ProtoField.int64("ripple.handshake.schema.version", "Version"))
field("hs_type", ProtoField.string("ripple.handshake.type", "Type"))
field("checkpoint_id", ProtoField.int64("ripple.checkpoint_id", "Checkpoint id"))
field("requested_at_ns", ProtoField.int64("ripple.requested_at_ns", "Requested at (ns)"))
field("position", ProtoField.string("ripple.position.output", "Position"))
field("position_seq", ProtoField.int64("ripple.position.sequence_no", "Sequence no"))
field("timestamp_ns", ProtoField.int64("ripple.timestamp_ns", "Timestamp (ns)"))
field("load", ProtoField.double("ripple.load", "Load"))
field("ok", ProtoField.bool("ripple.ok", "OK"))
field("errors", ProtoField.string("ripple.errors", "Error"))
-- Containers of typed values: their fields are the leaves beneath them.
field("record", ProtoField.none("ripple.value.record", "Record"))
field("list", ProtoField.none("ripple.value.list", "List"))
field("none", ProtoField.none("ripple.value.none", "None"))
field("some", ProtoField.none("ripple.value.some", "Some"))

local E = {
    crc_bad = ProtoExpert.new("ripple.crc.bad", "Bad CRC-32C", expert.group.CHECKSUM, expert.severity.WARN),
    malformed = ProtoExpert.new("ripple.malformed", "Malformed payload", expert.group.MALFORMED, expert.severity.ERROR),
    skipped = ProtoExpert.new("ripple.skipped", "Bytes that are no envelope", expert.group.MALFORMED,
        expert.severity.ERROR),
    unknown_schema = ProtoExpert.new("ripple.schema.unknown", "Delta of an unknown schema",
        expert.group.UNDECODED, expert.severity.NOTE),
}

-- ---------------------------------------------------------------- typed fields
-- One ProtoField per leaf of every baked schema: ripple.delta.NAME.FIELD[.SUB]
-- for rows, ripple.key.NAME[.SUB] for keys, bytes an abbrev cannot hold as
-- "_".  A leaf whose abbrev another type took first gets a suffix _2, _3...

local LEAF = {
    Int = ProtoField.int64, Int64 = ProtoField.int64, Int32 = ProtoField.int32,
    Float = ProtoField.double, Bool = ProtoField.bool, String = ProtoField.string, Enum = ProtoField.string,
}
local by_abbrev = {}

local function leaf_field(abbrev, label, k)
    local base, n = abbrev, 1
    while by_abbrev[abbrev] and by_abbrev[abbrev].k ~= k do
        n = n + 1
        abbrev = base .. "_" .. n
    end
    local have = by_abbrev[abbrev]
    if have then return have.f end
    local f = LEAF[k](abbrev, label ~= "" and label or '""') -- a field's name cannot be empty: the atom of ""
    by_abbrev[abbrev] = { k = k, f = f }
    F["leaf " .. abbrev] = f
    return f
end

-- A name as one part of an abbrev: each byte Wireshark does not allow there
-- as "_" (explicit ranges: %w would follow the locale), an empty name "_".
local function part(name)
    if name == "" then return "_" end
    return (name:gsub("[^A-Za-z0-9_%-]", "_"))
end

-- Gives every leaf node of a type its field (t.pf).
local function bind(t, abbrev, label)
    local k = t.k
    if k == "Option" or k == "List" then
        bind(t.t, abbrev, label)
    elseif k == "Record" then
        for _, fd in ipairs(t.fields) do bind(fd.t, abbrev .. "." .. part(fd.name), fd.name) end
    else
        t.pf = leaf_field(abbrev, label, k)
    end
end

for _, fp in ipairs(SCHEMA_ORDER) do
    local s = SCHEMAS[fp]
    bind(s.key, "ripple.key." .. part(s.name), "key")
    for _, fd in ipairs(s.fields) do bind(fd.t, "ripple.delta." .. part(s.name) .. "." .. part(fd.name), fd.name) end
end

set_fields(p, F)
p.experts = { E.crc_bad, E.malformed, E.unknown_schema, E.skipped }

p.prefs.heuristic = Pref.bool("Find Ripple on any TCP port", true,
    "Try every TCP connection whose first bytes are a Ripple envelope")

-- ---------------------------------------------------------------- text as ripple prints it

-- sexplib's atom: bare when it can be, else quoted as OCaml's String.escaped.
local ESC = { [0x22] = '\\"', [0x5C] = "\\\\", [0x0A] = "\\n", [0x09] = "\\t", [0x0D] = "\\r", [0x08] = "\\b" }
local function atom(s)
    local must = #s == 0 or s:find('[%z\1-\32"();\\\127-\255]') or s:find("#|", 1, true) or s:find("|#", 1, true)
    if not must then return s end
    return '"' .. s:gsub(".", function(c)
        local b = c:byte()
        if ESC[b] then return ESC[b] end
        if b >= 0x20 and b <= 0x7E then return c end
        return string.format("\\%03d", b)
    end) .. '"'
end

-- sexplib's float: %.15G when it reads back to the same double, else %.17G.
local function float_text(x)
    local s = string.format("%.15G", x)
    if x ~= x or x == math.huge or x == -math.huge then return s end
    if tonumber(s) ~= x then s = string.format("%.17G", x) end
    return s
end

-- A sexp as sexplib's one-line form: a list is {items}, an atom a string.
local function sexp_string(v)
    if type(v) == "string" then return atom(v) end
    local out, bare_before = {}, false
    for _, item in ipairs(v) do
        if type(item) == "string" then
            local a = atom(item)
            local bare = a == item
            if bare and bare_before then out[#out + 1] = " " end
            out[#out + 1] = a
            bare_before = bare
        else
            out[#out + 1] = sexp_string(item)
            bare_before = false
        end
    end
    return "(" .. table.concat(out) .. ")"
end

-- ---------------------------------------------------------------- bin_prot

local Malformed = {}
local function fail(what, at) error({ Malformed, what, at }, 0) end

-- A reader over the payload: pos is 0-based within tvb.
local function reader(tvb, pos, stop)
    -- budget: how many zero-width list elements the buffer may still hold
    -- (as ripple reads it, codec/values.py: as many in all as it has bytes)
    local r = { tvb = tvb, pos = pos, stop = stop, size = stop - pos, budget = stop - pos }
    function r.need(n, what)
        if r.pos + n > r.stop then fail("truncated: need " .. what, r.pos) end
    end
    function r.byte()
        r.need(1, "a byte")
        local b = tvb(r.pos, 1):uint()
        return b
    end
    return r
end

-- bin_prot's integer: returns (value as Int64 or number, start, length).
local function read_int(r, signed_ok_64)
    local at = r.pos
    local code = r.byte()
    if code < 0x80 then r.pos = at + 1; return code, at, 1 end
    local v, n
    if code == 0xFF then r.need(2, "an int8"); v = r.tvb(at + 1, 1):int(); n = 2
        if v >= 0 then fail("bad negative int8", at) end
    elseif code == 0xFE then r.need(3, "an int16"); v = r.tvb(at + 1, 2):le_int(); n = 3
    elseif code == 0xFD then r.need(5, "an int32"); v = r.tvb(at + 1, 4):le_int(); n = 5
    elseif code == 0xFC and signed_ok_64 then r.need(9, "an int64"); v = r.tvb(at + 1, 8):le_int64(); n = 9
    else fail(string.format("bad integer code 0x%02x", code), at) end
    r.pos = at + n
    return v, at, n
end

-- 64-bit fields take Int64 values only.
local function int64(v) return type(v) == "number" and Int64(v) or v end

-- OCaml's int is 63-bit: an 8-byte code beyond it does not decode (as in ripple).
local INT_MAX = Int64(0x3FFFFFFF) * 0x100000000 + 0xFFFFFFFF
local INT_MIN = -(Int64(0x40000000) * 0x100000000)
local function read_ocaml_int(r)
    local v, at, n = read_int(r, true)
    if n == 9 and (v > INT_MAX or v < INT_MIN) then fail("int out of range", at) end
    return v, at, n
end

local function read_nat0(r)
    local at = r.pos
    local code = r.byte()
    if code < 0x80 then r.pos = at + 1; return code end
    if code == 0xFE then r.need(3, "a length"); r.pos = at + 3; return r.tvb(at + 1, 2):le_uint() end
    if code == 0xFD then r.need(5, "a length"); r.pos = at + 5; return r.tvb(at + 1, 4):le_uint() end
    if code == 0xFC then
        r.need(9, "a length")
        local n = r.tvb(at + 1, 8):le_uint64()
        if n > UInt64(0xFFFFFFFF) then fail("length out of range", at) end
        r.pos = at + 9
        return n:tonumber()
    end
    fail(string.format("bad length code 0x%02x", code), at)
end

-- A string: returns (its bytes as a Lua string, start of its bytes, length).
local function read_string(r)
    local n = read_nat0(r)
    local at = r.pos
    if at + n > r.stop then fail("truncated string", at) end
    r.pos = at + n
    return (n > 0 and r.tvb(at, n):raw() or ""), at, n
end

local function read_bool(r)
    local b = r.byte()
    if b > 1 then fail("bad bool", r.pos) end
    r.pos = r.pos + 1
    return b == 1
end

local function read_float(r)
    r.need(8, "a float")
    local x = r.tvb(r.pos, 8):le_float()
    r.pos = r.pos + 8
    return x
end

local function read_ctor(r, count, what)
    local at = r.pos
    local t
    if count <= 256 then t = r.byte(); r.pos = at + 1
    else r.need(2, "a tag"); t = r.tvb(at, 2):le_uint(); r.pos = at + 2 end
    if t >= count then fail("bad " .. what .. " tag " .. t, at) end
    return t
end

local function range(r, at) return r.tvb(at, math.max(r.pos - at, 0)) end

-- ---------------------------------------------------------------- typed values

-- A tree that keeps nothing, for reading a value only for its text.
local NO_TREE = {}
function NO_TREE.add() return NO_TREE end
function NO_TREE.set_text() return NO_TREE end
function NO_TREE.set_len() return NO_TREE end

-- A type whose values take no bytes: a record of no fields, or of fields
-- all zero-width (codec/values.py zero_width).  Kept on the type.
local function zero_width(t)
    if t.zw == nil then
        local z = t.k == "Record"
        if z then
            for _, fd in ipairs(t.fields) do
                if not zero_width(fd.t) then z = false; break end
            end
        end
        t.zw = z
    end
    return t.zw
end

-- Adds a value of type t under tree, labelled; returns its sexp (for text).
local function add_value(r, tree, t, label)
    local k = t.k
    local at = r.pos
    if k == "Int" or k == "Int64" or k == "Int32" then
        local code = r.tvb(at, 1):uint()
        if k == "Int32" and code == 0xFC then fail("bad int32 code 0xfc", at) end
        local v, vat, n
        if k == "Int" then v, vat, n = read_ocaml_int(r) else v, vat, n = read_int(r, true) end
        local s = tostring(v)
        local it = tree:add(t.pf, r.tvb(vat, n), k == "Int32" and v or int64(v))
        it:set_text(label .. ": " .. s)
        return s
    elseif k == "Float" then
        local x = read_float(r)
        local s = float_text(x)
        tree:add(t.pf, range(r, at), x):set_text(label .. ": " .. s)
        return s
    elseif k == "Bool" then
        local b = read_bool(r)
        tree:add(t.pf, range(r, at), b):set_text(label .. ": " .. (b and "true" or "false"))
        return b and "true" or "false"
    elseif k == "String" then
        local s, sat, n = read_string(r)
        local a = atom(s)
        tree:add(t.pf, r.tvb(sat, n), s):set_text(label .. ": " .. a)
        return s
    elseif k == "Enum" then
        local i = read_ctor(r, #t.names, "enum")
        local name = t.names[i + 1]
        tree:add(t.pf, range(r, at), name):set_text(label .. ": " .. name)
        return name
    elseif k == "Option" then
        local tag = r.byte()
        if tag > 1 then fail("bad option tag", at) end
        r.pos = at + 1
        if tag == 0 then
            tree:add(F.none, range(r, at)):set_text(label .. ": None")
            return {}
        end
        if t.t.k == "Option" then
            local sub = tree:add(F.some, r.tvb(at, 1))
            local v = add_value(r, sub, t.t, label)
            sub:set_len(r.pos - at)
            sub:set_text(label .. ": Some")
            return { v }
        end
        return { add_value(r, tree, t.t, label) }
    elseif k == "List" then
        local n = read_nat0(r)
        local items = {}
        if zero_width(t.t) then
            -- Its elements take no bytes: the count is held to the budget,
            -- not to the bytes left; one element read, the same n times,
            -- and no subtree each (they would all be the same empty one).
            if n > r.budget then
                fail(string.format("list of %d empty elements over the decode budget (%d of %d left)",
                    n, r.budget, r.size), at)
            end
            r.budget = r.budget - n
            local sub = tree:add(F.list, r.tvb(at, r.pos - at))
            if n > 0 then
                local v = add_value(r, NO_TREE, t.t, label)
                for i = 1, n do items[i] = v end
            end
            sub:set_text(label .. ": " .. n .. (n == 1 and " item" or " items"))
            return items
        end
        if n > r.stop - r.pos then fail("list cannot fit", at) end
        local sub = tree:add(F.list, r.tvb(at, 1))
        for i = 1, n do items[i] = add_value(r, sub, t.t, label) end
        sub:set_len(r.pos - at)
        sub:set_text(label .. ": " .. n .. (n == 1 and " item" or " items"))
        return items
    else -- Record
        local sub = tree:add(F.record, r.tvb(at, math.min(1, r.stop - at)))
        local pairs_ = {}
        for i, fd in ipairs(t.fields) do
            pairs_[i] = { fd.name, add_value(r, sub, fd.t, fd.name) }
        end
        sub:set_len(r.pos - at)
        sub:set_text(label)
        return pairs_
    end
end

local function sexp_text(v)
    return type(v) == "string" and atom(v) or sexp_string(v)
end

-- ---------------------------------------------------------------- messages

-- An int64 field.
local function add_int(r, tree, pf)
    local v, at, n = read_int(r, true)
    tree:add(pf, r.tvb(at, n), int64(v))
    return v
end

-- An OCaml int field (63-bit).
local function add_ocaml_int(r, tree, pf)
    local v, at, n = read_ocaml_int(r)
    tree:add(pf, r.tvb(at, n), int64(v))
    return v
end

local function add_string(r, tree, pf)
    local s, at, n = read_string(r)
    tree:add(pf, r.tvb(at, n), s)
    return s
end

local function add_option_int(r, tree, pf, label)
    local at = r.pos
    local tag = r.byte()
    if tag > 1 then fail("bad option tag", at) end
    r.pos = at + 1
    if tag == 0 then
        tree:add(F.none, r.tvb(at, 1)):set_text(label .. ": None")
        return nil
    end
    return add_int(r, tree, pf)
end

local function type_sexp(t)
    local k = t.k
    if k == "Option" or k == "List" then return { k, type_sexp(t.t) } end
    if k == "Enum" then return { "Enum", t.names } end
    if k == "Record" then
        local fs = {}
        for i, fd in ipairs(t.fields) do
            fs[i] = { { "name", fd.name }, { "typ", type_sexp(fd.t) }, { "default", {} } }
        end
        return { "Record", fs }
    end
    return k
end

-- Schema.t's field_type, read (for the Handshake's tree): returns its sexp.
-- Nested at most 64 deep, as ripple reads it (codec/schema.py): deeper, the
-- Handshake is malformed, not a Lua stack overflow.
local MAX_TYPE_DEPTH = 64
local function read_type(r, depth)
    depth = depth or 0
    if depth > MAX_TYPE_DEPTH then fail("field type nested too deeply", r.pos) end
    local tag = read_ctor(r, 10, "field_type")
    local names = { "Int", "Int32", "Int64", "Float", "Bool", "String", "Option", "List", "Record", "Enum" }
    local k = names[tag + 1]
    if k == "Option" or k == "List" then return { k, read_type(r, depth + 1) } end
    if k == "Record" then
        local n, fs = read_nat0(r), {}
        for i = 1, n do
            local name = read_string(r)
            local typ = read_type(r, depth + 1)
            local d = {}
            if read_bool(r) then d = { (read_string(r)) } end
            fs[i] = { { "name", name }, { "typ", typ }, { "default", d } }
        end
        return { "Record", fs }
    end
    if k == "Enum" then
        local n, ns = read_nat0(r), {}
        for i = 1, n do ns[i] = read_string(r) end
        return { "Enum", ns }
    end
    return k
end

local function dissect_handshake(r, tree)
    local worker = add_string(r, tree, F.worker)
    local n = read_nat0(r)
    local outs = {}
    for i = 1, n do
        local at = r.pos
        local output, oat, on = read_string(r)
        local sub = tree:add(F.hs_output, r.tvb(oat, on), output)
        local sat = r.pos
        local name, nat, nn = read_string(r)
        local version, vat, vn = read_ocaml_int(r)
        local fp = name .. "/v" .. tostring(version)
        local sitem = sub:add(F.hs_schema, range(r, sat), fp)
        sitem:add(F.hs_schema_name, r.tvb(nat, nn), name)
        sitem:add(F.hs_schema_version, r.tvb(vat, vn), int64(version))
        local kat = r.pos
        sub:add(F.hs_type, r.tvb(kat, 1), sexp_string({ "key", read_type(r) })):set_len(r.pos - kat)
        local nf = read_nat0(r)
        for _ = 1, nf do
            local fat = r.pos
            local fname = read_string(r)
            local typ = read_type(r)
            local d = ""
            if read_bool(r) then d = " default " .. read_string(r) end
            sub:add(F.hs_type, range(r, fat), sexp_string({ fname, typ }) .. d)
        end
        sub:set_text("Output " .. atom(output) .. ": " .. fp)
        outs[i] = output .. " (" .. fp .. ")"
    end
    local v = add_ocaml_int(r, tree, F.protocol_version)
    local list = #outs > 0 and table.concat(outs, ", ") or "no outputs"
    return "worker " .. worker .. " v" .. tostring(v) .. ": " .. list
end

local function dissect_delta(r, tree, fp, root)
    local output = add_string(r, tree, F.output)
    local key, kat, kn = read_string(r)
    local dbytes, dat, dn = read_string(r)
    local seqpos = r.pos
    local seqno = read_ocaml_int(r)
    local s = SCHEMAS[fp]
    local what, key_text
    if s == nil then
        tree:add(F.key_bytes, r.tvb(kat, kn))
        tree:add(F.delta_bytes, r.tvb(dat, dn))
        -- Its kind all the same: the variant's tag, its first byte whatever the
        -- schema, as `ripple decode -Y`'s delta reads it.
        local kind = dn > 0 and ({ [0] = "set", "patch", "remove" })[r.tvb(dat, 1):uint()]
        if kind then tree:add(F.delta, r.tvb(dat, 1), kind) end
        key_text = "0x" .. (kn > 0 and tostring(r.tvb(kat, kn):bytes()):lower() or "")
        tree:add(F.key, r.tvb(kat, kn), key_text)
        what = "schema unknown: " .. dn .. " delta bytes"
        root:add_proto_expert_info(E.unknown_schema, "Delta of schema " .. fp .. ", which this dissector does not know")
    else
        -- The key's text is the item's value: read once for it, then into the tree.
        local kr = reader(r.tvb, kat, kat + kn)
        key_text = sexp_text(add_value(kr, NO_TREE, s.key, "key"))
        if kr.pos ~= kat + kn then fail("trailing bytes after the key", kr.pos) end
        local kitem = tree:add(F.key, r.tvb(kat, kn), key_text)
        add_value(reader(r.tvb, kat, kat + kn), kitem, s.key, "key")
        local dr = reader(r.tvb, dat, dat + dn)
        local tag = read_ctor(dr, 3, "delta")
        local kind = ({ [0] = "set", "patch", "remove" })[tag]
        local ditem = tree:add(F.delta, r.tvb(dat, math.max(dn, 0)), kind)
        local parts = {}
        if kind == "set" then
            for i, fd in ipairs(s.fields) do
                parts[i] = fd.name .. "=" .. sexp_text(add_value(dr, ditem, fd.t, fd.name))
            end
            what = "Set " .. table.concat(parts, " ")
        elseif kind == "patch" then
            local n = read_nat0(dr)
            for i = 1, n do
                local at = dr.pos
                local j = read_ctor(dr, #s.fields, "update")
                local fd = s.fields[j + 1]
                local u = ditem:add(F.update, r.tvb(at, 1), fd.name)
                parts[i] = fd.name .. "=" .. sexp_text(add_value(dr, u, fd.t, fd.name))
                u:set_len(dr.pos - at)
            end
            what = "Patch " .. table.concat(parts, " ")
        else
            what = "Remove"
        end
        if dr.pos ~= dat + dn then fail("trailing bytes after the delta", dr.pos) end
    end
    local _ = seqpos
    r.pos = seqpos
    add_ocaml_int(r, tree, F.sequence_no)
    add_option_int(r, tree, F.watermark_ns, "Watermark")
    return output, key_text, "#" .. tostring(seqno) .. " " .. what
end

local function dissect_checkpoint_ack(r, tree)
    local worker = add_string(r, tree, F.worker)
    local id = add_ocaml_int(r, tree, F.checkpoint_id)
    local n = read_nat0(r)
    local pos = {}
    for i = 1, n do
        local output, oat, on = read_string(r)
        local sub = tree:add(F.position, r.tvb(oat, on), output)
        local q = add_ocaml_int(r, sub, F.position_seq)
        sub:set_text("Position: " .. atom(output) .. "@" .. tostring(q))
        pos[i] = output .. "@" .. tostring(q)
    end
    local text = "worker " .. worker .. " checkpoint " .. tostring(id) .. " " .. table.concat(pos, " ")
    return (text:gsub("%s+$", ""))
end

local function dissect_payload(tvb, tree, root, tag, fp, at, n)
    local r = reader(tvb, at, at + n)
    local output, key, what = "", "", ""
    if tag == 0 then
        what = dissect_handshake(r, tree)
    elseif tag == 1 then
        output, key, what = dissect_delta(r, tree, fp, root)
    elseif tag == 2 then
        local id = add_ocaml_int(r, tree, F.checkpoint_id)
        add_int(r, tree, F.requested_at_ns)
        what = "checkpoint " .. tostring(id)
    elseif tag == 3 then
        what = dissect_checkpoint_ack(r, tree)
    elseif tag == 4 then
        local worker = add_string(r, tree, F.worker)
        add_int(r, tree, F.timestamp_ns)
        local x = read_float(r)
        tree:add(F.load, tvb(r.pos - 8, 8), x):set_text("Load: " .. float_text(x))
        what = "worker " .. worker .. " load " .. string.format("%.2f", x)
    elseif tag == 5 then
        local ok = read_bool(r)
        tree:add(F.ok, tvb(r.pos - 1, 1), ok)
        local m = read_nat0(r)
        local errs = {}
        for i = 1, m do errs[i] = add_string(r, tree, F.errors) end
        what = ok and "ok" or ("REFUSED: " .. table.concat(errs, "; "))
    else
        what = n .. " payload bytes"
        r.pos = at + n
    end
    if r.pos ~= at + n then fail((at + n - r.pos) .. " trailing bytes", r.pos) end
    return output, key, what
end

-- ---------------------------------------------------------------- the envelope

local function dissect_envelope(tvb, pinfo, tree)
    local n = math.max(tvb(55, 4):le_int(), 0) -- as envelope_length reads it
    local size = OVERHEAD + n
    local root = tree:add(p, tvb(0, size))
    root:add(F.magic, tvb(0, 4))
    root:add(F.version, tvb(4, 1))
    local tag = tvb(5, 1):uint()
    root:add(F.tag, tvb(5, 1))
    local tname = TYPE_NAMES[tag] or ("Unknown(" .. tag .. ")")
    root:add(F.type, tvb(5, 1), tname)
    root:add(F.flags, tvb(6, 1))
    local seq = tvb(7, 8):le_int64()
    root:add_le(F.seq, tvb(7, 8))
    local t = tvb(15, 8):le_int64()
    local billion = Int64(1000000000)
    local secs, ns = t / billion, t % billion
    if ns < Int64(0) then secs = secs - 1; ns = ns + billion end
    root:add(F.time, tvb(15, 8), NSTime(secs:tonumber(), ns:tonumber()))
    root:add_le(F.time_ns, tvb(15, 8))
    local fp = tvb(23, 32):raw():gsub("%z+$", "")
    root:add(F.schema, tvb(23, 32), fp)
    root:add_le(F.length, tvb(55, 4))
    root:add(F.size, tvb(55, 4), size):set_generated()
    local want = tvb(59 + n, 4):le_uint()
    local got = crc32c(tvb(0, 59 + n):raw())
    local crc = root:add_le(F.crc, tvb(59 + n, 4))
    local status
    if got == want then
        crc:append_text(" [correct]")
        status = crc:add(F.crc_status, tvb(59 + n, 4), 1)
    else
        crc:append_text(string.format(" [incorrect, should be 0x%08x]", got))
        status = crc:add(F.crc_status, tvb(59 + n, 4), 0)
        crc:add(F.crc_calc, tvb(59 + n, 4), got):set_generated()
        crc:add_proto_expert_info(E.crc_bad, string.format("Bad CRC-32C: 0x%08x, should be 0x%08x", want, got))
    end
    status:set_generated()
    local ptree = root:add(F.msg, tvb(59, n))
    ptree:set_text(tname)
    local line
    local ok, output, key, what = xpcall(function() return dissect_payload(tvb, ptree, root, tag, fp, 59, n) end,
        function(e) return type(e) == "table" and e or debug.traceback(e) end)
    if not ok then
        local e = output
        if type(e) ~= "table" or e[1] ~= Malformed then error(e, 0) end
        root:add_proto_expert_info(E.malformed, "Malformed " .. tname .. " payload: " .. e[2] .. " at payload byte " .. (e[3] - 59))
        line = tname .. " " .. fp .. " [malformed: " .. e[2] .. "]"
    else
        line = tname .. " " .. fp
        if output ~= "" then line = line .. " " .. output .. " " .. key end
        line = line .. " " .. what
    end
    if got ~= want then line = line .. " [BAD CRC]" end
    root:append_text(", " .. tname .. ", Seq: " .. tostring(seq))
    set_info(pinfo, "Ripple", escape_text(line))
    return size
end

-- An envelope header ripple would frame: the magic, version 1, a payload
-- length within --max-payload's default (16 MiB).  Anything else is damage:
-- skipped to the next "RIPP" that starts one, as ripple's decoder resyncs.
local MAX_PAYLOAD = 16 * 1024 * 1024

local function header_ok(tvb, at)
    if tvb(at, 4):raw() ~= "RIPP" or tvb(at + 4, 1):uint() ~= 1 then return false end
    local n = tvb(at + 55, 4):le_int()
    return n >= 0 and n <= MAX_PAYLOAD
end

local function skipped(tvb, pinfo, tree, at, n)
    local item = tree:add(p, tvb(at, n))
    item:set_text(string.format("Ripple: %d bytes skipped to the next envelope", n))
    item:add_proto_expert_info(E.skipped, string.format("%d bytes that are no envelope, skipped", n))
    set_info(pinfo, "Ripple", string.format("[%d bytes skipped]", n))
end

-- A damaged stretch that reaches the end of a segment waits for the next
-- one, so that it is one item however the segments cut it; up to this
-- many bytes (an endless one is shown in pieces), and not past a FIN.
local MAX_DAMAGE_HELD = 65536
local tcp_fin = Field.new("tcp.flags.fin")

local function dissect(tvb, pinfo, tree)
    local at, len = 0, tvb:len()
    local damaged -- where the bytes being skipped began
    local function flush()
        if damaged then skipped(tvb, pinfo, tree, damaged, at - damaged); damaged = nil end
    end
    while at < len do
        local avail = len - at
        if avail < HEADER then
            -- The start of a header: wait for the rest (what is not one is
            -- found out once the header is whole).
            local head = tvb(at, math.min(5, avail)):raw()
            if ("RIPP\1"):sub(1, #head) == head then
                -- From the damage, if any, so that it is one item, however
                -- the segments cut it.
                pinfo.desegment_offset, pinfo.desegment_len = damaged or at, DESEGMENT_ONE_MORE_SEGMENT
                return len
            end
        end
        if avail >= HEADER and header_ok(tvb, at) then
            flush()
            local size = OVERHEAD + tvb(at + 55, 4):le_int()
            if avail < size then
                pinfo.desegment_offset, pinfo.desegment_len = at, size - avail
                return len
            end
            dissect_envelope(tvb(at, size):tvb(), pinfo, tree)
            at = at + size
        else
            -- Damage: up to the next "RIPP", or to the end of what is here
            -- but for a tail that may begin one in the next segment.
            damaged = damaged or at
            local rest = tvb(at + 1, avail - 1):raw()
            local n = rest:find("RIPP", 1, true)
            if not n then
                local keep = 0
                for k = math.min(4, #rest), 1, -1 do
                    if rest:sub(-k) == ("RIPP\1"):sub(1, k) then keep = k; break end
                end
                n = avail - keep
                local fin = tcp_fin()
                if keep == 0 and len - damaged < MAX_DAMAGE_HELD and not (fin and fin.value) then
                    pinfo.desegment_offset, pinfo.desegment_len = damaged, DESEGMENT_ONE_MORE_SEGMENT
                    return len
                end
            end
            at = at + n
        end
    end
    flush()
    return len
end
p.dissector = dissect

local function looks(tvb)
    return p.prefs.heuristic and tvb:len() >= 5 and tvb(0, 4):raw() == "RIPP" and tvb(4, 1):uint() == 1
end

register_tcp(p, RIPPLE_PORT, "Ripple", dissect, looks)

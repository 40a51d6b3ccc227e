-- Written by `ripple wireshark` (ripple-wireshark(1)): Wireshark Lua
-- dissectors for the protocols ripple decodes.  What they share comes first.

-- ---------------------------------------------------------------- a dissector's parts

-- The fields of a dissector, from its table of ProtoFields.
local function set_fields(p, F)
    local list = {}
    for _, f in pairs(F) do list[#list + 1] = f end
    p.fields = list
end

-- Info: the line of each message that ends in the packet, joined by " | "
-- when several do (over one call or several).
local function set_info(pinfo, short, line)
    if tostring(pinfo.cols.protocol) == short then
        pinfo.cols.info:append(" | " .. line)
    else
        pinfo.cols.protocol = short
        pinfo.cols.info = line
    end
end

-- Another dissector (JSON) on a message's bytes, the columns kept: it
-- sets its own protocol and appends to Info.  Info is put back whole,
-- the fence TCP sets between PDUs cleared first (else the text before
-- it would be written twice); set_info then goes on from it.
local function call_keeping_columns(d, tvb, pinfo, tree)
    local proto, info = tostring(pinfo.cols.protocol), tostring(pinfo.cols.info)
    d:call(tvb, pinfo, tree)
    pinfo.cols.protocol = proto
    pinfo.cols.info:clear_fence()
    pinfo.cols.info = info
end

-- p on its preferred TCP port (the preference "port", whose default is
-- `port`; 0: none) and, when `looks(tvb)` is given, on any TCP connection
-- whose first bytes it recognises: that connection is then p's.
local function register_tcp(p, port, what, dissect, looks)
    p.prefs.port = Pref.uint("TCP port", port, "The TCP port " .. what .. " is decoded on (0: none)")
    local registered = 0
    local function use(n)
        local tcp = DissectorTable.get("tcp.port")
        if registered ~= 0 then tcp:remove(registered, p) end
        registered = n
        if n ~= 0 then tcp:add(n, p) end
    end
    function p.prefs_changed() use(p.prefs.port) end
    use(port)
    if looks then
        p:register_heuristic("tcp", function(tvb, pinfo, tree)
            if not looks(tvb) then return false end
            pinfo.conversation = p
            dissect(tvb, pinfo, tree) -- the function itself: through its handle it would not desegment
            return true
        end)
    end
end

-- Characters Python's str.isprintable() refuses beyond the ASCII controls
-- (C1 controls, no-break and other spaces, format characters): ranges of
-- code points, escaped as repr() escapes them.
local UNPRINTABLE = { { 0x80, 0xA0 }, { 0xAD, 0xAD }, { 0x600, 0x605 }, { 0x1680, 0x1680 }, { 0x2000, 0x200F },
    { 0x2028, 0x202F }, { 0x205F, 0x206F }, { 0x3000, 0x3000 }, { 0xD800, 0xDFFF }, { 0xFEFF, 0xFEFF },
    { 0xFFF9, 0xFFFB } }

local function unprintable(code)
    for _, r in ipairs(UNPRINTABLE) do if code >= r[1] and code <= r[2] then return true end end
    return false
end

-- OCaml's String.escaped for the ASCII controls, as the sexp form (sexp/atoms.py).
local CONTROL = { [8] = "\\b", [9] = "\\t", [10] = "\\n", [13] = "\\r" }

-- The characters of UTF-8 text as ripple's escape_text shows them (every
-- table and the sexp form): a byte that is not UTF-8 is "\ddd", an ASCII
-- control OCaml's escape ("\027"), another character that does not print
-- "\u{XXXX}".
local function text_chars(s)
    local out, i = {}, 1
    while i <= #s do
        local c = s:byte(i)
        local n = c < 0x80 and 1 or c >= 0xF5 and 0 or c >= 0xF0 and 4 or c >= 0xE0 and 3 or c >= 0xC2 and 2 or 0
        local ch = n > 0 and s:sub(i, i + n - 1) or nil
        if ch and (#ch < n or ch:sub(2):find("[^\128-\191]")) then ch = nil end
        local code = c
        if ch and n > 1 then
            code = bit32.band(c, bit32.rshift(0x7F, n))
            for k = 2, n do code = code * 64 + bit32.band(ch:byte(k), 0x3F) end
            local least = ({ 0x80, 0x800, 0x10000 })[n - 1]
            if code < least or code > 0x10FFFF or (code >= 0xD800 and code <= 0xDFFF) then ch = nil end
        end
        if ch == nil then
            out[#out + 1] = string.format("\\%03d", c)
            i = i + 1
        else
            if n == 1 and (c < 0x20 or c == 0x7F) then
                ch = CONTROL[c] or string.format("\\%03d", c)
            elseif n > 1 and unprintable(code) then
                ch = string.format("\\u{%04X}", code)
            end
            out[#out + 1] = ch
            i = i + n
        end
    end
    return out
end

-- A whole line as ripple's tables show it (escape_text): Info carries no
-- byte a terminal or a log would act on (ESC, NUL, CR), as tshark's
-- output is read in both.
local function escape_text(s)
    if not s:find("[%z\1-\31\127-\255]") then return s end
    return table.concat(text_chars(s))
end

-- ---------------------------------------------------------------- CRC-32C

local CRC_TABLE = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if bit32.band(c, 1) == 1 then c = bit32.bxor(bit32.rshift(c, 1), 0x82F63B78) else c = bit32.rshift(c, 1) end
    end
    CRC_TABLE[i] = c
end

local function crc32c(s)
    local c = 0xFFFFFFFF
    local band, bxor, rshift, byte = bit32.band, bit32.bxor, bit32.rshift, string.byte
    for i = 1, #s do
        c = bxor(CRC_TABLE[band(bxor(c, byte(s, i)), 0xFF)], rshift(c, 8))
    end
    return bxor(c, 0xFFFFFFFF)
end

-- ---------------------------------------------------------------- JSON
-- Enough of JSON to read a message's top-level members: returns the value
-- and the position after it, or nil on anything that is not JSON.  An
-- object's keys keep their order (json_keys), numbers their text (ids may
-- exceed 2^53), so that json_dumps writes what Python's json.dumps would.

local json_value
local json_null = setmetatable({}, { __tostring = function() return "null" end })
local json_keys = setmetatable({}, { __mode = "k" }) -- object -> its keys in order
local JSON_NUMBER = { __tostring = function(n) return n.text end }

local function json_skip(s, i) return (s:find("[^ \t\r\n]", i)) or #s + 1 end

local JSON_ESC = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

local function utf8_char(code)
    if code < 0x80 then return string.char(code) end
    if code < 0x800 then return string.char(0xC0 + bit32.rshift(code, 6), 0x80 + bit32.band(code, 0x3F)) end
    if code < 0x10000 then
        return string.char(0xE0 + bit32.rshift(code, 12), 0x80 + bit32.band(bit32.rshift(code, 6), 0x3F),
            0x80 + bit32.band(code, 0x3F))
    end
    return string.char(0xF0 + bit32.rshift(code, 18), 0x80 + bit32.band(bit32.rshift(code, 12), 0x3F),
        0x80 + bit32.band(bit32.rshift(code, 6), 0x3F), 0x80 + bit32.band(code, 0x3F))
end

local function json_string(s, i)
    local out, j = {}, i + 1
    while true do
        local c = s:sub(j, j)
        if c == "" then return nil end
        if c == '"' then return table.concat(out), j + 1 end
        if c == "\\" then
            local e = s:sub(j + 1, j + 1)
            if e == "u" then
                local code = tonumber(s:sub(j + 2, j + 5), 16)
                if not code then return nil end
                j = j + 6
                local low = s:sub(j, j + 1) == "\\u" and tonumber(s:sub(j + 2, j + 5), 16)
                if code >= 0xD800 and code < 0xDC00 and low and low >= 0xDC00 and low < 0xE000 then
                    code = 0x10000 + (code - 0xD800) * 0x400 + (low - 0xDC00)
                    j = j + 6
                end
                out[#out + 1] = utf8_char(code)
            elseif JSON_ESC[e] then
                out[#out + 1] = JSON_ESC[e]
                j = j + 2
            else
                return nil
            end
        else
            out[#out + 1] = c
            j = j + 1
        end
    end
end

json_value = function(s, i)
    i = json_skip(s, i)
    local c = s:sub(i, i)
    if c == '"' then return json_string(s, i) end
    if c == "{" or c == "[" then
        local obj, close, keys = {}, c == "{" and "}" or "]", {}
        if c == "{" then json_keys[obj] = keys end
        i = json_skip(s, i + 1)
        if s:sub(i, i) == close then return obj, i + 1 end
        local n = 0
        while true do
            local key
            if c == "{" then
                if s:sub(i, i) ~= '"' then return nil end
                key, i = json_string(s, i)
                if not key then return nil end
                i = json_skip(s, i)
                if s:sub(i, i) ~= ":" then return nil end
                i = i + 1
            end
            local v
            v, i = json_value(s, i)
            if i == nil then return nil end
            n = n + 1
            if key and obj[key] == nil then keys[#keys + 1] = key end
            obj[key or n] = v
            i = json_skip(s, i)
            local d = s:sub(i, i)
            if d == close then return obj, i + 1 end
            if d ~= "," then return nil end
            i = json_skip(s, i + 1)
        end
    end
    for word, v in pairs({ ["true"] = true, ["false"] = false, null = json_null }) do
        if s:sub(i, i + #word - 1) == word then return v, i + #word end
    end
    local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
    if num and #num > 0 then return setmetatable({ text = num }, JSON_NUMBER), i + #num end
    return nil
end

local function json_parse(s)
    local v, i = json_value(s, 1)
    if i == nil or json_skip(s, i) <= #s then return nil end
    return v
end

local function json_is_number(v) return getmetatable(v) == JSON_NUMBER end
local function json_is_object(v) return type(v) == "table" and json_keys[v] ~= nil end

-- The code points of UTF-8 text (a stray byte stands for itself).
local function code_points(s)
    local out, i = {}, 1
    while i <= #s do
        local c = s:byte(i)
        local n = c < 0x80 and 1 or c >= 0xF0 and 4 or c >= 0xE0 and 3 or c >= 0xC0 and 2 or 1
        local code = n == 1 and c or bit32.band(c, bit32.rshift(0x7F, n))
        for k = 1, n - 1 do code = code * 64 + bit32.band(s:byte(i + k) or 0, 0x3F) end
        out[#out + 1] = { code, s:sub(i, i + n - 1) }
        i = i + n
    end
    return out
end

local DUMP_ESC = { [0x22] = '\\"', [0x5C] = "\\\\", [0x0A] = "\\n", [0x0D] = "\\r", [0x09] = "\\t", [0x08] = "\\b",
    [0x0C] = "\\f" }

-- Python's repr of a float: the fewest digits that read back, fixed
-- notation for exponents -4 to 15, else d.ddde+XX.
local function float_repr(x)
    local sign = (x < 0 or 1 / x < 0) and "-" or ""
    x = math.abs(x)
    if x == 0 then return sign .. "0.0" end
    local t
    for p = 0, 16 do
        t = string.format("%." .. p .. "e", x)
        if tonumber(t) == x then break end
    end
    local mantissa, e = t:match("^([%d.]+)e([-+]%d+)$")
    local digits = mantissa:gsub("%.", ""):gsub("0+$", "")
    e = tonumber(e)
    if digits == "" then digits = "0" end
    if e >= 16 or e < -4 then
        return sign .. digits:sub(1, 1) .. (#digits > 1 and "." .. digits:sub(2) or "") .. string.format("e%+03d", e)
    end
    if e < 0 then return sign .. "0." .. string.rep("0", -e - 1) .. digits end
    if #digits <= e + 1 then return sign .. digits .. string.rep("0", e + 1 - #digits) .. ".0" end
    return sign .. digits:sub(1, e + 1) .. "." .. digits:sub(e + 2)
end

-- Python's json.dumps (ensure_ascii, ", " and ": ").
local function json_dumps(v)
    if v == json_null then return "null" end
    if v == true then return "true" end
    if v == false then return "false" end
    if json_is_number(v) then
        local text = v.text
        if text:find("^-?%d+$") then return (text:gsub("^%-0$", "0")) end
        return float_repr(tonumber(text))
    end
    if type(v) == "string" then
        local out = {}
        for _, cp in ipairs(code_points(v)) do
            local code = cp[1]
            if DUMP_ESC[code] then
                out[#out + 1] = DUMP_ESC[code]
            elseif code >= 0x20 and code < 0x7F then
                out[#out + 1] = cp[2]
            elseif code >= 0x10000 then
                code = code - 0x10000
                out[#out + 1] = string.format("\\u%04x\\u%04x", 0xD800 + math.floor(code / 0x400), 0xDC00 + code % 0x400)
            else
                out[#out + 1] = string.format("\\u%04x", code)
            end
        end
        return '"' .. table.concat(out) .. '"'
    end
    local parts = {}
    if json_is_object(v) then
        for _, k in ipairs(json_keys[v]) do parts[#parts + 1] = json_dumps(k) .. ": " .. json_dumps(v[k]) end
        return "{" .. table.concat(parts, ", ") .. "}"
    end
    for _, x in ipairs(v) do parts[#parts + 1] = json_dumps(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
end

-- Text cut to `limit` characters, the last of them "…" when it is cut.
local function cut_chars(s, limit)
    local cps = code_points(s)
    if #cps <= limit then return s end
    local out = {}
    for k = 1, limit - 1 do out[k] = cps[k][2] end
    return table.concat(out) .. "\226\128\166"
end

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
-- and the position after it, or nil on anything that is not JSON.

local json_value
local json_null = setmetatable({}, { __tostring = function() return "null" end })

local function json_skip(s, i) return (s:find("[^ \t\r\n]", i)) or #s + 1 end

local JSON_ESC = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

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
                out[#out + 1] = code < 0x80 and string.char(code) or "?"
                j = j + 6
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
        local obj, close = {}, c == "{" and "}" or "]"
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
    if num and #num > 0 then return num, i + #num end -- numbers stay text: ids may exceed 2^53
    return nil
end

local function json_parse(s)
    local v, i = json_value(s, 1)
    if i == nil or json_skip(s, i) <= #s then return nil end
    return v
end


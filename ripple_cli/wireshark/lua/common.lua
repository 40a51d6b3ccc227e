-- Written by `ripple wireshark` (ripple-wireshark(1)): Wireshark Lua
-- dissectors for the protocols ripple decodes.  What they share comes first.

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


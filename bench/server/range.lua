-- SPDX-License-Identifier: Apache-2.0
-- wrk script: GET MF_PATH with a random 1 MiB Range inside a blob of MF_SIZE bytes, with
-- "Authorization: Bearer MF_TOKEN" when MF_TOKEN is set (mf-server; nginx gets none).
-- No response() callback: wrk would copy every 1 MiB body into Lua, client CPU taken from
-- the two cores the server under test shares; run.sh checks instead that the bytes read
-- per request are one range's (a 200 with the whole blob would be 64 times that).
local path = os.getenv("MF_PATH")
local size = tonumber(os.getenv("MF_SIZE"))
local token = os.getenv("MF_TOKEN")
local chunk = 1048576

function setup(thread)
    thread:set("id", math.random(1, 1000000))
end

function init(args)
    math.randomseed(id or 1)
end

function request()
    local first = math.random(0, size - chunk)
    local headers = { Range = "bytes=" .. first .. "-" .. (first + chunk - 1) }
    if token and token ~= "" then
        headers["Authorization"] = "Bearer " .. token
    end
    return wrk.format("GET", path, headers)
end

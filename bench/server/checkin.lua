-- SPDX-License-Identifier: Apache-2.0
-- wrk script: POST /v1/checkin as a random device of MF_CREDS (one credential per line),
-- with a fresh nonce each time and the model it runs (MF_MODEL at MF_VERSION / MF_SHA256).
local creds = {}
for line in io.lines(os.getenv("MF_CREDS")) do
    creds[#creds + 1] = line
end
local models = '"models":[{"name":"' .. os.getenv("MF_MODEL") .. '","version":"' ..
    os.getenv("MF_VERSION") .. '","sha256":"' .. os.getenv("MF_SHA256") .. '"}]'
local bad = 0

function setup(thread)
    thread:set("id", math.random(1, 1000000))
end

function init(args)
    math.randomseed(id or 1)
end

function request()
    local nonce = string.format("%08x%08x%08x%08x", math.random(0, 0x7fffffff),
        math.random(0, 0x7fffffff), math.random(0, 0x7fffffff), math.random(0, 0x7fffffff))
    local body = '{"nonce":"' .. nonce .. '","root_version":1,"keys_version":1,' .. models .. '}'
    local headers = {
        ["Authorization"] = "Bearer " .. creds[math.random(1, #creds)],
        ["Content-Type"] = "application/json",
    }
    return wrk.format("POST", "/v1/checkin", headers, body)
end

function response(status, headers, body)
    if status ~= 200 then
        bad = bad + 1
        if bad == 1 then
            io.stderr:write("checkin.lua: status " .. status .. "\n")
        end
    end
end

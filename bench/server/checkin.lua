-- SPDX-License-Identifier: Apache-2.0
-- wrk script: POST /v1/checkin as a random device of MF_CREDS (one credential per line),
-- with a fresh nonce each time and the model it runs (MF_MODEL at MF_VERSION / MF_SHA256,
-- and the release it holds when MF_RELEASE is set).
-- No response() callback: wrk then parses every answer's headers and body into Lua, which
-- cost the client CPU the server shares two cores with; run.sh fails the run on wrk's own
-- count of non-2xx answers instead.
local creds = {}
for line in io.lines(os.getenv("MF_CREDS")) do
    creds[#creds + 1] = line
end
-- MF_RELEASE (optional): the release digest the device names as held (release_sha256,
-- docs/protocol.md "Check-ins that send only what changed"); unset: an older agent.
local held = os.getenv("MF_RELEASE")
local models = '"models":[{"name":"' .. os.getenv("MF_MODEL") .. '","version":"' ..
    os.getenv("MF_VERSION") .. '","sha256":"' .. os.getenv("MF_SHA256") .. '"' ..
    ((held and held ~= "") and (',"release_sha256":"' .. held .. '"') or "") .. '}]'

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

-- SPDX-License-Identifier: Apache-2.0
-- wrk script: POST /v1/offload/batch as a random device of MF_CREDS (one credential per
-- line): MF_BATCH samples (default 64) of 784 input bytes each (base64), every batch id,
-- sample id and input distinct (the server stores inputs content-addressed, so repeated
-- inputs would flatter it). Counts non-200 answers and prints the first.
local creds = {}
for line in io.lines(os.getenv("MF_CREDS")) do
    creds[#creds + 1] = line
end
local per_batch = tonumber(os.getenv("MF_BATCH") or "64")
local b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
-- 784 bytes = the first 6 bytes (8 base64 characters, varied per sample) + 778 fixed bytes
-- (1040 characters with padding): any 8 base64 characters decode to 6 bytes.
local tail = {}
for i = 1, 1036 do
    local k = (i * 7) % 64 + 1
    tail[#tail + 1] = b64:sub(k, k)
end
tail = table.concat(tail) .. "AA=="
local counter, bad = 0, 0 -- `tid` is a global: set per thread by setup()

function setup(thread)
    thread:set("tid", math.random(1, 0x7fffffff))
end

function init(args)
    math.randomseed(tid or 1)
    tid = tid or 1
end

local function prefix(n)
    local s = {}
    for _ = 1, 8 do
        local k = n % 64 + 1
        s[#s + 1] = b64:sub(k, k)
        n = math.floor(n / 64)
    end
    return table.concat(s)
end

function request()
    local now = os.time()
    local parts = {}
    counter = counter + 1
    for i = 1, per_batch do
        local n = counter * per_batch + i
        parts[i] = string.format('{"id":"%08x%08x%016x","kind":"hard","model":"digits",' ..
            '"model_version":"v3","method":"max_softmax","score":0.41,"created_at":%d,' ..
            '"output_kind":"logits","output":[1.0,0.6,-1.0,0.1,0.2,0.3,0.4,0.5,0.6,0.7],' ..
            '"input":"%s%s"}', tid, i, counter, now, prefix(tid * 65536 + n), tail)
    end
    local body = string.format('{"batch_id":"%08x%024x","model":"digits","samples":[%s]}',
        tid, counter, table.concat(parts, ","))
    local headers = {
        ["Authorization"] = "Bearer " .. creds[math.random(1, #creds)],
        ["Content-Type"] = "application/json",
    }
    return wrk.format("POST", "/v1/offload/batch", headers, body)
end

function response(status, headers, body)
    if status ~= 200 then
        bad = bad + 1
        if bad == 1 then
            io.stderr:write("batch.lua: status " .. status .. ": " .. body .. "\n")
        end
    end
end

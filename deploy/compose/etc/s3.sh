#!/bin/sh
# The HA cluster's S3 store (docker-compose.ha.yml): one Garage node, its bucket `headwater`
# (the masters' blobs under blobs/, the workers' checkpoints under checkpoints/) and one key,
# made at the first start. The key goes to the secrets-s3 volume in the AWS credentials
# format, readable by its owner alone; the masters and the workers mount it read-only.
set -eu
home=/var/lib/headwater/s3
creds=/var/lib/headwater/secrets/s3/credentials
if ! command -v garage >/dev/null; then
    echo "s3: Garage is not in the image: run scripts/install-garage, then deploy/compose/build" >&2
    exit 1
fi
umask 077
mkdir -p "$home/meta" "$home/data"
conf="$home/garage.toml"
if [ ! -s "$conf" ]; then
    python3 - "$home" > "$conf.tmp" <<'PY'
import secrets, sys
home = sys.argv[1]
print(f'''metadata_dir = "{home}/meta"
data_dir = "{home}/data"
db_engine = "lmdb"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:3901"
rpc_public_addr = "127.0.0.1:3901"
rpc_secret = "{secrets.token_hex(32)}"
[s3_api]
s3_region = "garage"
api_bind_addr = "0.0.0.0:3900"
root_domain = ".s3.garage.localhost"
[admin]
api_bind_addr = "127.0.0.1:3903"
admin_token = "{secrets.token_hex(16)}"''')
PY
    mv "$conf.tmp" "$conf"
fi
RUST_LOG=garage=warn garage -c "$conf" server &
server=$!
trap 'kill -TERM "$server"; wait "$server"; exit 0' TERM INT
until garage -c "$conf" status >/dev/null 2>&1; do
    kill -0 "$server" 2>/dev/null || { wait "$server"; exit 1; }
    sleep 1
done
if [ ! -s "$creds" ]; then
    node="$(garage -c "$conf" node id -q | cut -d@ -f1)"
    garage -c "$conf" layout assign -z dc1 -c 1G "$node" >/dev/null
    garage -c "$conf" layout apply --version 1 >/dev/null
    garage -c "$conf" json-api CreateKey '{"name": "headwater"}' > "$home/key.json"
    bucket="$(garage -c "$conf" json-api CreateBucket '{"globalAlias": "headwater"}')"
    python3 - "$home/key.json" "$bucket" > "$home/allow.json" <<'PY'
import json, sys
key, bucket = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
print(json.dumps({"bucketId": bucket["id"], "accessKeyId": key["accessKeyId"],
                  "permissions": {"read": True, "write": True, "owner": True}}))
PY
    garage -c "$conf" json-api AllowBucketKey "$(cat "$home/allow.json")" >/dev/null
    python3 - "$home/key.json" > "$creds.tmp" <<'PY'
import json, sys
key = json.load(open(sys.argv[1]))
print(f"[default]\naws_access_key_id = {key['accessKeyId']}\n"
      f"aws_secret_access_key = {key['secretAccessKey']}")
PY
    mv "$creds.tmp" "$creds"
    rm -f "$home/key.json" "$home/allow.json"
    echo "s3: made the bucket headwater and its key"
fi
wait "$server"

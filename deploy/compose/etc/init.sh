#!/bin/sh
# The compose cluster's first start (run again on every `up`; it makes only what is missing):
#   - join tokens for the workers and the agents (the master's admin token asks for them),
#   - the broker's accounts (agent, sensors) and their passwords,
#   - the IoT example, submitted once (HEADWATER_EXAMPLE=none leaves the cluster empty).
# Each consumer mounts only its own secrets folder: nodes/, broker/, sensors/.
set -eu
secrets=/var/lib/headwater/secrets
# the first master's admin token; with standbys (docker-compose.ha.yml), whichever master led
# first made it, in its own volume
admin=/var/lib/headwater/master/admin.token
if [ ! -s "$admin" ] && [ -s /var/lib/headwater/master-2/admin.token ]; then
    admin=/var/lib/headwater/master-2/admin.token
fi
umask 077

for role in worker agent; do
    if [ ! -s "$secrets/nodes/$role.join" ]; then
        headwater token create --role "$role" --description "compose ${role}s" \
            --token-file "$admin" > "$secrets/nodes/$role.join.tmp"
        mv "$secrets/nodes/$role.join.tmp" "$secrets/nodes/$role.join"
        echo "init: made the ${role}s' join token"
    fi
done

if [ ! -s "$secrets/broker/mqtt.passwd" ]; then
    python3 -c 'import secrets; print(secrets.token_urlsafe(24))' > "$secrets/nodes/mqtt-agent.password"
    python3 -c 'import secrets; print(secrets.token_urlsafe(24))' > "$secrets/sensors/mqtt-sensors.password"
    : > "$secrets/broker/mqtt.passwd.tmp"
    mosquitto_passwd -b "$secrets/broker/mqtt.passwd.tmp" agent "$(cat "$secrets/nodes/mqtt-agent.password")"
    mosquitto_passwd -b "$secrets/broker/mqtt.passwd.tmp" sensors "$(cat "$secrets/sensors/mqtt-sensors.password")"
    mv "$secrets/broker/mqtt.passwd.tmp" "$secrets/broker/mqtt.passwd"
    echo "init: made the broker's accounts (agent, sensors)"
fi

running() {  # is topology $1 on the master?
    python3 - "$1" "$admin" <<'PY'
import json, os, sys, urllib.request
name, token = sys.argv[1], open(sys.argv[2]).read().strip()
req = urllib.request.Request(
    os.environ["HEADWATER_MASTER"] + "/api/v1/topologies",
    headers={"Authorization": f"Bearer {token}"},
)
sys.exit(0 if any(t["name"] == name for t in json.load(urllib.request.urlopen(req, timeout=10))) else 1)
PY
}

example="${HEADWATER_EXAMPLE:-iot}"
case "$example" in
    iot)
        if running iot; then
            echo "init: the IoT example runs already"
        else
            headwater submit /usr/share/headwater/examples/iot/pipeline.py --containers 2 \
                --token-file "$admin"
            echo "init: submitted the IoT example (topology iot)"
        fi ;;
    none) ;;
    *) echo "init: HEADWATER_EXAMPLE is iot or none, not $example" >&2; exit 2 ;;
esac

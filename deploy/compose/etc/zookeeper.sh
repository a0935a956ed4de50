#!/bin/sh
# One server of the HA cluster's ZooKeeper ensemble (docker-compose.ha.yml): server ZK_ID of
# ZK_SERVERS (its peers' names, in order), Debian's ZooKeeper jars on the image's Java 17.
# Its data (the masters' records, their transaction log and snapshots) is in its volume.
set -eu
home=/var/lib/headwater/zookeeper
mkdir -p "$home/data"
echo "${ZK_ID:?ZK_ID: this server's number in ZK_SERVERS, from 1}" > "$home/data/myid"
{
    echo "tickTime=1000"
    echo "initLimit=10"
    echo "syncLimit=5"
    echo "minSessionTimeout=2000"  # the masters ask for 6 s sessions
    echo "dataDir=$home/data"
    echo "clientPort=2181"
    echo "quorumListenOnAllIPs=true"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=ruok,srvr"
    echo "autopurge.snapRetainCount=3"
    echo "autopurge.purgeInterval=1"
    i=1
    for peer in $(echo "${ZK_SERVERS:?ZK_SERVERS: the ensemble, e.g. zk1,zk2,zk3}" | tr , ' '); do
        echo "server.$i=$peer:2888:3888"
        i=$((i + 1))
    done
} > "$home/zoo.cfg"
exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "-Dzookeeper.log.dir=$home" \
    -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$home/zoo.cfg"

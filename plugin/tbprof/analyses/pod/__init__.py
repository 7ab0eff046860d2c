"""Pod viewer: steps and collectives across the hosts of a pod."""

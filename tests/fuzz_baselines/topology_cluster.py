from fuzz import call

BASELINES = {
    "Cluster": call(servers=2, gpus_per_server=4, nics_per_server=2, servers_per_leaf=1),
}

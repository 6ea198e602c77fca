from fuzz import call

BASELINES = {
    "qp_bytes": call(1 << 20, 4, split_data_on_qps=False, local_nics=1, remote_nics=1, messages=8),
}

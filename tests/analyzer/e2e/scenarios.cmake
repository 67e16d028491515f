# The sim scenarios of examples/scenarios/README.md, asserted on the analyzer's JSON.
set(_s ${PROJECT_SOURCE_DIR}/examples/scenarios)
foreach(_seed 1 2 3)
  ringside_add_e2e_scenario(healthy_seed${_seed} RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json
    EXPECT "verdict=healthy;findings=0;named=0" ARGS --seed ${_seed})
endforeach()
# A rank that ends with os._exit (no exit record) in a job that otherwise ended normally:
# noted, not blamed.
ringside_add_e2e_scenario(quick_exit RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json
  EXPECT "verdict=healthy;findings=0;named=0;warning=no exit record" ARGS --quick-exit-rank 3)
# 40 steps: a 20% straggler must stand out from the sim's CPU noise on 2 cores.
ringside_add_e2e_scenario(straggler_gpu RANKS 8 NODES 2 CLUSTER ${_s}/straggler_gpu.json
  EXPECT "verdict=degraded;kind=straggler;ranks=5;nodes=node2" ARGS --steps 40)
# The same slow GPU in the last stage of a pipeline whose gradient all-reduces follow
# its backward pass back to back (issued ahead of the GPU): no op has compute right
# before it, yet the straggler is named, and nothing else.
ringside_add_e2e_scenario(straggler_pipeline RANKS 8 NODES 2 CLUSTER ${_s}/straggler_gpu.json
  EXPECT "verdict=degraded;kind=straggler;ranks=5;nodes=node2;named=1" ARGS --pp 2 --microbatches 4 --steps 40)
ringside_add_e2e_scenario(throttled_gpu RANKS 8 NODES 2 CLUSTER ${_s}/throttled_gpu.json
  EXPECT "verdict=degraded;kind=straggler;ranks=2;nodes=node1;cause=throttling")
ringside_add_e2e_scenario(imbalance_data RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json
  EXPECT "verdict=degraded;kind=imbalance;subkind=data_dependent" ARGS --imbalance data --heavy-factor 2)
# The stages meet only in send/recv: seen in compute time, not collective lateness.
ringside_add_e2e_scenario(imbalance_stage RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json
  EXPECT "verdict=degraded;kind=imbalance;subkind=structural;ranks=4,5,6,7" ARGS --pp 2 --imbalance pipeline --heavy-factor 2)
# Healthy pipeline: equal stages are not imbalance.
ringside_add_e2e_scenario(healthy_pipeline RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json
  EXPECT "verdict=healthy;findings=0;named=0" ARGS --pp 2)
# Slow links on a data-parallel job (one world communicator, rings): seen only
# through NCCL's profiler plugin; exactly one finding, naming exactly the fault.
ringside_add_e2e_scenario(slow_nic RANKS 8 NODES 4 CLUSTER ${_s}/slow_nic.json
  EXPECT "verdict=degraded;findings=1;kind=slow_link;subkind=nic;nodes=node3")
ringside_add_e2e_scenario(slow_pair RANKS 8 NODES 4 CLUSTER ${_s}/slow_pair.json
  EXPECT "verdict=degraded;findings=1;kind=slow_link;subkind=node_pair;nodes=node2,node3")
ringside_add_e2e_scenario(healthy_4nodes RANKS 8 NODES 4 CLUSTER ${_s}/healthy_4nodes.json
  EXPECT "verdict=healthy;findings=0;named=0")
# The same faults under a pipeline (send/recv between stages) and under benchmarks.
ringside_add_e2e_scenario(slow_nic_pipeline RANKS 8 NODES 4 CLUSTER ${_s}/slow_nic.json
  EXPECT "verdict=degraded;kind=slow_link;subkind=nic;nodes=node3" ARGS --pp 4)
ringside_add_e2e_scenario(slow_pair_pipeline RANKS 8 NODES 4 CLUSTER ${_s}/slow_pair.json
  EXPECT "verdict=degraded;kind=slow_link;subkind=node_pair;nodes=node2,node3" ARGS --pp 4)
ringside_add_e2e_scenario(slow_nic_bench_all_reduce RANKS 8 NODES 4 CLUSTER ${_s}/slow_nic.json
  PROGRAM nccl_bench_probe
  EXPECT "verdict=degraded;findings=1;kind=slow_link;subkind=nic;nodes=node3"
  ARGS all_reduce -b 1M -e 4M -f 2 -n 20 -w 2)
ringside_add_e2e_scenario(slow_pair_bench_alltoall RANKS 8 NODES 4 CLUSTER ${_s}/slow_pair.json
  PROGRAM nccl_bench_probe
  EXPECT "verdict=degraded;findings=1;kind=slow_link;subkind=node_pair;nodes=node2,node3"
  ARGS alltoall -b 4M -e 16M -f 2 -n 20 -w 2)
ringside_add_e2e_scenario(slow_pair_bench_sendrecv RANKS 8 NODES 4 CLUSTER ${_s}/slow_pair.json
  PROGRAM nccl_bench_probe
  EXPECT "verdict=degraded;findings=1;kind=slow_link;subkind=node_pair;nodes=node2,node3"
  ARGS sendrecv -b 1M -e 4M -f 2 -n 20 -w 2)
ringside_add_e2e_scenario(healthy_4nodes_bench_sendrecv RANKS 8 NODES 4
  CLUSTER ${_s}/healthy_4nodes.json PROGRAM nccl_bench_probe
  EXPECT "verdict=healthy;findings=0;named=0" ARGS sendrecv -b 1M -e 4M -f 2 -n 20 -w 2)
# A hung job ends at simrun's timeout, as at a time limit: it reaches the fault in
# about 2 s (5 s on a loaded host), so 15 s leave the hang standing for 10 s and more.
ringside_add_e2e_scenario(stop TIMEOUT 15 RANKS 8 NODES 2 CLUSTER ${_s}/stop.json
  EXPECT "verdict=hung;kind=hang;subkind=missing_rank;ranks=3;comm=world;seq=22" ARGS)
# The same hangs under a PyTorch-style watchdog: after 6 s of waiting (more than
# --hang-wait), ranks abort their communicators and die of SIGABRT (or exit, told by NCCL
# that a peer aborted), the stalled rank too.  Their deaths answer the wait: the one root
# is still rank 3, or rank 5's GPU.
ringside_add_e2e_scenario(stop_watchdog TIMEOUT 25 RANKS 8 NODES 2 CLUSTER ${_s}/stop.json
  EXPECT "verdict=hung;findings=1;kind=hang;subkind=missing_rank;ranks=3;comm=world"
  ARGS --nccl-timeout 6)
ringside_add_e2e_scenario(stall_watchdog TIMEOUT 25 RANKS 8 NODES 2 CLUSTER ${_s}/stall.json
  EXPECT "verdict=hung;findings=1;kind=hang;subkind=gpu_stall;ranks=5;comm=world;seq=22"
  ARGS --nccl-timeout 6)
ringside_add_e2e_scenario(stall TIMEOUT 15 RANKS 8 NODES 2 CLUSTER ${_s}/stall.json
  EXPECT "verdict=hung;kind=hang;subkind=gpu_stall;ranks=5;comm=world;seq=22")
ringside_add_e2e_scenario(freeze TIMEOUT 15 RANKS 8 NODES 2 CLUSTER ${_s}/freeze.json
  EXPECT "verdict=hung;kind=hang;subkind=all_stuck;ranks=0,1,2,3,4,5,6,7;comm=world;seq=22")
ringside_add_e2e_scenario(crash TIMEOUT 25 RANKS 8 NODES 2 CLUSTER ${_s}/crash.json
  EXPECT "verdict=hung;kind=hang;subkind=dead_rank;ranks=6;comm=world;seq=22")
ringside_add_e2e_scenario(desync TIMEOUT 15 RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json
  EXPECT "verdict=hung;kind=desync;ranks=2;comm=world;seq=16" ARGS --desync-rank 2 --desync-step 5)
ringside_add_e2e_scenario(gpu_health RANKS 8 NODES 2 CLUSTER ${_s}/gpu_health.json
  EXPECT "kind=gpu_health;ranks=7;nodes=node2")
# Back-to-back benchmark collectives on a healthy cluster: launch jitter is not imbalance.
ringside_add_e2e_scenario(healthy_nccl_bench RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json PROGRAM nccl_bench
  EXPECT "verdict=healthy;findings=0;named=0" ARGS all_reduce -b 8 -e 1M -f 4 -n 20 -w 2)
# Processes that drive two GPUs each (a thread per GPU): each communicator has twice as
# many ranks as there are trace files.
ringside_add_e2e_scenario(healthy_bench_threads RANKS 4 NODES 2 CLUSTER ${_s}/healthy.json
  PROGRAM nccl_bench_probe EXPECT "verdict=healthy;findings=0;named=0"
  ARGS all_reduce -t 2 -b 8 -e 1M -f 4 -n 20 -w 2)
# Hybrid TP x PP x DP with communicators from unique ids (as PyTorch's new_group):
# healthy, and a rank that stops inside its tensor-parallel group.
ringside_add_e2e_scenario(healthy_hybrid_uniqueid RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json
  EXPECT "verdict=healthy;findings=0;named=0" ARGS --tp 2 --pp 2 --comm-init uniqueid)
ringside_add_e2e_scenario(stop_tp_uniqueid TIMEOUT 15 RANKS 8 NODES 2 CLUSTER ${_s}/stop_tp.json
  EXPECT "verdict=hung;findings=1;kind=hang;subkind=missing_rank;ranks=5" ARGS --tp 2 --pp 2 --comm-init uniqueid)
# Four pipeline stages that place the same work differently around the same
# collectives (stage 0 computes before its tensor-parallel all-reduce, the last one
# has just waited in a receive): healthy.  And a heavier stage in a hybrid job with
# unique-id communicators, found whole from compute time.
ringside_add_e2e_scenario(healthy_tp2pp4_uniqueid RANKS 16 NODES 4 CLUSTER ${_s}/healthy_4nodes.json
  EXPECT "verdict=healthy;findings=0;named=0" ARGS --tp 2 --pp 4 --comm-init uniqueid --jitter 0.05)
ringside_add_e2e_scenario(imbalance_stage_hybrid RANKS 16 NODES 4 CLUSTER ${_s}/healthy_4nodes.json
  EXPECT "verdict=degraded;kind=imbalance;subkind=structural;ranks=8,9,10,11,12,13,14,15"
  ARGS --tp 2 --pp 2 --comm-init uniqueid --imbalance pipeline --heavy-factor 1.5 --steps 30)
# A different rank each step with twice the work (a long sample) in a hybrid job: its
# tensor-parallel peer waits at once, the other stage and replicas through it.  Seen
# per op, since most ops of every communicator are quiet.  16 ranks on 2 cores wait for
# a core about as long as 30 ms of extra work a step costs them (0.7-1.0 s against
# 0.6 s in a 4 s job), and uneven compute no larger than that is not taken for
# imbalance: the steps compute 120 ms, as a GPU would beside the sim's collectives,
# which take the CPU (2 s against 0.9 s).
ringside_add_e2e_scenario(imbalance_data_hybrid RANKS 16 NODES 4 CLUSTER ${_s}/healthy_4nodes.json
  EXPECT "verdict=degraded;kind=imbalance;subkind=data_dependent"
  ARGS --tp 2 --pp 2 --comm-init uniqueid --imbalance data --heavy-factor 2 --compute-ms 120)
# A slow GPU pair inside a node: timed by the kernel channels of send/recv tasks
# (alltoall too: NCCL runs it as send/recv), named exactly; healthy twins clean.
ringside_add_e2e_scenario(slow_gpu_pair_bench_sendrecv RANKS 8 NODES 2 CLUSTER ${_s}/slow_gpu_pair.json
  PROGRAM nccl_bench_probe
  EXPECT "verdict=degraded;findings=1;kind=slow_link;subkind=intra_node;nodes=node2;ranks=5,6"
  ARGS sendrecv -b 1M -e 4M -f 2 -n 20 -w 2)
ringside_add_e2e_scenario(slow_gpu_pair_bench_alltoall RANKS 8 NODES 2 CLUSTER ${_s}/slow_gpu_pair.json
  PROGRAM nccl_bench_probe
  EXPECT "verdict=degraded;findings=1;kind=slow_link;subkind=intra_node;nodes=node2;ranks=5,6"
  ARGS alltoall -b 4M -e 16M -f 2 -n 20 -w 2)
# The same pair under an alltoall whose network transfers outlast it: it costs the job
# about 1% or less, so it may fall under the bar for findings; named either way, alone.
ringside_add_e2e_scenario(cheap_gpu_pair_bench_alltoall RANKS 16 NODES 4
  CLUSTER ${_s}/slow_gpu_pair_4nodes.json PROGRAM nccl_bench_probe
  EXPECT "named=1;below_cost_ok=1;kind=slow_link;subkind=intra_node;nodes=node2;ranks=5,6"
  ARGS alltoall -b 4M -e 16M -f 2 -n 20 -w 2)
ringside_add_e2e_scenario(healthy_bench_alltoall RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json
  PROGRAM nccl_bench_probe
  EXPECT "verdict=healthy;findings=0;named=0" ARGS alltoall -b 4M -e 16M -f 2 -n 20 -w 2)
ringside_add_e2e_scenario(healthy_bench_sendrecv RANKS 8 NODES 2 CLUSTER ${_s}/healthy.json
  PROGRAM nccl_bench_probe
  EXPECT "verdict=healthy;findings=0;named=0" ARGS sendrecv -b 1M -e 4M -f 2 -n 20 -w 2)

"""The assignment problem as CP-SAT models, solved lexicographically and deterministically.

Notation
--------
W             workloads that were routed (have at least one candidate target)
T             targets (Slurm partitions, Kubernetes node pools), drawing on node sets;
              node sets joined by the targets that share them are one capacity component K
              (nodes.py), whose nodes come in classes of identical free capacity (idle
              nodes, and nodes with running work as what is left on them)
C(w) ⊆ T      the candidate targets of w, with rank r_wt (0 = `route`, 1.. = `else route`)
              and preference place p_wt (0 = best by the clause's `prefer` terms)
x_wt ∈ {0,1}  w is placed on t, for t ∈ C(w)
On t, w is either pods (a service's min replicas, a job's one task: each pod on one node,
with its GPUs or MIG slices, CPUs and memory) or whole nodes (exclusive and multi-node jobs:
that many distinct idle nodes, nothing else on them).

Constraints
-----------
  Σ_t x_wt ≤ 1                                                  each workload placed once at most
  P_K(x) packs: every pod and whole node of the placements on K's targets has a node of
     K (of its target's node sets) and no node is over its free whole GPUs, slices of
     each MIG profile (a GPU is whole or cut, never both), CPUs or memory
  Σ_{w ∈ q, t ∈ q} u_qwt x_wt ≤ L_q                             every quota limit q
  Σ_{w ∈ g, t: a(t) = a} x_wt ≤ S_g                             every `spread` group g and
                                                                value a of its attribute
  Σ_t x_wt = 1   for protected planned w                        priority preemption: with a
     previous plan, planned work keeps a place unless it is preemptible or a newcomer of
     higher priority competes for its targets (preempt.py)

Objective (lexicographic, each level solved to the end before the next is fixed)
---------
  1. maximise  Σ prio_w · work_w · x_wt     work_w = 100·GPUs + CPUs (+1 so every placement counts)
  2. minimise  Σ prio_w · r_wt x_wt         primary routes over fallbacks, first for the
                                            higher priorities
  3. maximise  Σ_{t = prev(w)} x_wt         stay where the previous plan put it, unless moving
                                            buys placed work or rank (GitOps stability)
  4. minimise  Σ p_wt x_wt                  `prefer` terms (cost and the like)
  5. minimise  Σ (CPUs_w + 1) x_wt          over CPU-only w on GPU targets when w has a
                                            candidate without GPUs: GPU nodes are kept for
                                            GPU work (built in; after `prefer`, so a rule
                                            that prefers GPU nodes for CPU work wins)
  6. minimise  Σ s_wt x_wt                  stable tie-break: s_wt = place of t in w's
                                            candidates sorted by target id

Formulation: the aggregate model as a relaxation, exact packing checks, Benders cuts
-----------
Identical workloads form a class k of n_k members with one integer count y_kt = Σ_{w∈k} x_wt
per candidate target: the same rows and levels with the class's coefficients, exact for
integer solutions (aggregate.py). P_K is not written per node: it is relaxed into rows per
component and per target (aggregate.cut_rows) that every packing satisfies — each axis in
total, whole nodes on idle nodes, and per axis and k = 1, 2, 3 "pods of more than 1/(k+1) of
a node's free amount: at most k per node" (k = 1 is the old more-than-half cut, now per
resource: a GPU-heavy and a CPU-heavy pod may share a node). Each solution of a level is
then packed, component by component, onto the real node classes (pack.py: first-fit
decreasing over runs of identical nodes, then an exact CP-SAT bin packing over the classes'
nodes: CP-SAT's own search, then depth first with load-ordered symmetry breaking where that
decided nothing). A component that provably does not pack gets a
logic-based Benders cut on its class counts — a no-good ∨_{v∈S} y_v ≤ c_v − 1 over a subset
S shrunk by a deletion filter (benders.py), lifted to sums (_lifted): variables of one Item
and one set of allowed node sets are one term Σ_{v∈G} y_v ≤ c_G − 1, since only Items and
node sets decide a packing (the audit's A16, shared3-s19: gpu, gpu-long and preempt over one
node set of 2 nodes, 9 jobs; cut per variable, each round's master moved the same members to
another of the three targets at the same value, the rounds stalled after 3 and the plan was
the repaired FEASIBLE 2336, bound 2886; lifted, OPTIMAL 2358, the audit's exact
optimum; shared3-s16 FEASIBLE 9750 -> OPTIMAL 9778; per-node variables for small
components, issue 11's other way, were not needed there) — and the level is solved again (up to
SMALL_ROUNDS times in a small component, within one CUT_BUDGET of checks, filters and
solves again, and only while the cuts do not stall; a large one goes straight on, see
CUT_ROUNDS); when the rounds stop, placed work keeps the best of the rounds' repaired
solutions (the members least worth leave the
components that do not pack, then greedy completion on the real nodes) and the other levels
keep the previous level's plan; either way the status is FEASIBLE, never OPTIMAL. Last, the
last fill (greedy.completed): any member that still fits next to the plan node by node is
placed (greedy, best worth first); then each capacity component is packed afresh with its
unplaced members added, vector-aware (pack.balanced: each pod, largest share first, on the
node whose free amounts it matches best, by a dot product or by balanced best fit; the
score that adds more worth is kept, again until nothing more goes in), within rows, quotas
and spreads. First fit by one axis strands the other (bench L seed 0 before: 11 nodes with
0 CPUs and 256 GiB free beside 2 with CPUs and no memory), and a member it could not add
beside the plan often fits once the component is re-packed. A component of at most 64
nodes keeps that packing; a larger one keeps only as many of the added members as plain
first fit packs afresh (see "Large components"). The last step (greedy._topped): each class
with unplaced members, best worth first, takes one more member at a time by insertion with
ejection (eject.py: where no node has room, a pod of the plan leaves a node for another node
of its own targets, itself ejecting one more at most; swaps included; nodes alike and pods
of one kind tried once each), else by an exact packing of the component with that member
added, on components of at most 32 nodes: where the nodes are alike, node patterns
(patterns.py, 0.1 s), else (or undecided) CP-SAT's own search over per-node counts (0.03
deterministic s), the new packing kept; else, where the component is larger or the exact
try decided nothing (not where it proved no room), by re-packing a few nodes (region.py:
the member and the pods on 2, 3, 4, 6, 8 or 12 of the nodes with most room for it, exactly
onto those nodes, the rest staying; a whole-node member gets idle-capable nodes so; on a
small component, once such a try fails, by first fit only), else, for pods, by best fit
afresh on the axis the component's members ask most of (pack.best_fit: each pod on the
node with the least of it free that holds it). The audit's slurmx-m2 (35 CPU nodes, 11 of
1,789 CPUs to spare, ~60 shapes) packs one more 17-CPU job by best fit where first fit over
the node classes and the exact searches in their limits found none: 271 -> 272 placed,
falsely unplaced 1 -> 0. Its seed 1 (26 nodes of 191 GiB, jobs of 182-189 GiB each) left 7
out because one region that failed turned the regions off for the component; the first-fit
regions after that find them (244 -> 245 placed, 7 -> 0 falsely unplaced, 3 left undecided
by the referee). Bench L seeds 0 and 1, wide and the example are byte-identical to before.
Bench XL seed 0 left 92 workloads falsely unplaced on hpc-r9-4/cpu (43 nodes: past 32, and
the node patterns' LP is degenerate there) and hpc-r17-2/cpu (31 nodes, 13 shapes: past
configs.MAX_SHAPES, the exact try undecided); with the regions 0, and the audit's exclusive
jobs on 36 busy nodes (cpucomp small seed 0) 2 -> 0. A class that takes no more is done,
with every class asking at least as much (members of a class are identical). The exact
packing (pack.exact_packing) reads its variables' bounds from its own table: ortools 9.15's
proto wrapper reads `domain[-1]` as 0, which made it "prove" packable counts impossible
(and drop per-node rows), so small components cut off plans that pack and reported OPTIMAL
(the referee's three reproducers in tests/pack/test_found.py). Why this one: node-pattern
(configuration) variables explode with many pod shapes per target and per-node variables
with hundreds of nodes per target, while this keeps the model the solver already solves
well at 10k workloads, adds nothing for targets that pack (most do), and stays exact where
it matters: an OPTIMAL level is optimal for the per-node problem, since every cut is
proven. Identical nodes are one class throughout, so there is no per-node symmetry to blow
up.

Small components proven exactly by node patterns (exact.py, stop 22). Where a small
component's level 1 ends unproven after the rounds (a stall, the cut budget, a repair), it
is solved again as a node-pattern model: per node class, integer counts of nodes per maximal
pattern (pods of each demand kind on one node), pods per class of each variable, the
component's own rows; SCIP, branch and bound on its Gilmore-Gomory LP, one thread, a node
limit (deterministic). Its answer replaces the rounds' only when SCIP proves it optimal
(bound rounded down = value) and its layout checks node by node; the bound stays the
rounds' otherwise. Chosen by measurement on slow-awkward-20 (60 jobs, 54 routed, 20 alike
nodes of 3 GPUs / 43 CPUs / 199 GiB; true optimum 18,188 by the audit's own pattern model):
  rounds + cuts (before)                   FEASIBLE 17,949, bound 18,810
  per-node CP-SAT, alike nodes ordered     not proven in 120 s (8 workers: 18,180 / 18,727)
  per-node SCIP, alike nodes ordered       not proven in 20 s
  config LP (column generation)            bound 18,285; integer master on its 117
                                           columns 18,187: one short, no proof
  maximal patterns (1,463), CP-SAT         14,784 / 20,839 after 60 s (its LP unused)
  maximal patterns (1,463), SCIP           OPTIMAL 18,188 in 2 search nodes, 0.2 CPU s
Stronger Benders cuts cannot close it: every cut removes one class-count vector of the
aggregate model, whose bound (18,810) is the aggregate LP's; what closes it is the pattern
LP (18,285) plus branching. Per-node variables have the aggregate LP too, and symmetry
breaking on alike nodes only shrinks the search, not the gap. The path is taken only by
small components (at most SMALL_COMPONENT = 300 aggregate variables) that the rounds left
unproven, and only while the maximal patterns of all their classes number at most
exact.MAX_COLUMNS (5,000; the number that grows with nodes × kinds is the patterns, not
nodes × items: identical nodes are one class). Bench L seeds 0-2 and XL seed 0 never take
it (0 calls: their small components are proven by the rounds, the large ones are past 300
variables), so they and the example are byte-identical; slow-awkward-20 spends 0.2-0.9
CPU s in it, shared3-s10 0.4 (FEASIBLE -> OPTIMAL at 7,061), the audit's awkward medium
seed 0 0.2 on a component of 134 nodes and 439 members (not proven: the rounds' plan kept).

Node patterns where shapes are few (configs.py, after _topped in the last fill). Where a
capacity component's work is single-pod work of at most configs.MAX_SHAPES shapes (no MIG
slices or multi-pod members; pods of whole GPUs since stop 22, single whole nodes since stop
31, below), the component is re-packed exactly by a node-pattern
(configuration) model: per node class, integer counts of nodes per pattern (pods of each
shape on one node) and of each variable's members per class, within the rows, quotas,
spreads and class sizes that the fill holds, members placed staying placed, maximising the
worth added; the current packing's node contents are patterns, so it is a complete hint.
Its LP is the strong (Gilmore-Gomory) one: where CPU partitions of 16-76 nodes fill memory
to the GiB with a few shapes of batch jobs, per-node variables (pack.exact_packing) and
insertion with ejection stall, while the pattern model is solved at once. The maximal
patterns are enumerated when they are few (at most 3,000, 30,000 search steps: XL's
cpu-long partitions, 64 CPUs a node, 216-901 patterns, proven optimal); otherwise they are
generated (a 128-CPU node has 6,037): GLOP's duals price a pattern by a bounded knapsack over
CPUs and memory until none has a positive reduced cost; the LP's value is then a bound (a
component it shows has no room costs nothing more), and the integer model gets the
patterns of reduced cost about 0 as well, which are the ones an optimal LP solution uses.
CP-SAT solves it with one worker, a fixed seed, 0.5 deterministic s and LP linearization
level 2 (XL's hpc-r6-0/cpu-long: optimal at 0.05 det s, still open at 2 det s at the default
level); the counts are laid out on the nodes in class and pattern order, checked node by
node, and kept only if they add worth. Why patterns here and not per target: the two reasons
against them above (many shapes, and the solver's own rows) do not hold on these
components, and the symmetry of many identical nodes is what the per-node search could not
break. Figures: XL seed 0's five CPU partitions with falsely unplaced work, each planned alone
from the XL plan's own state (tests/solve/data/patterns), 352 / 195 / 96 / 47 / 7 -> 0 falsely
unplaced, +4 / +3 / +7 / +5 / +5 placed; bench L (--workers 1) the step costs 0.40 / 0.02 /
0.03 CPU s at seeds 0 / 1 / 2 (200 components each; the LP bound ends most of them), and
seeds 1 and 2 place the same (falsely unplaced 0, unplaced 1,341 and 1,293).
Since stop 31 a single-node exclusive job takes part too (its only pattern: the node alone,
where nothing runs), and where the pattern model ends below its LP bound on a component of
one node class, members left out are added one at a time where the placed pods and one more
still pack, found by diving on the LP of node patterns (dive.py: min nodes covering the pod
counts, priced by the same knapsack, the last few patterns solved exactly). The audit's
cpucomp small seed 9 (53 nodes, 7 exclusive jobs) and big small seed 5 (153 nodes, 25
shapes) had 27 and 56 jobs left out that router's referee re-packs; 0 after, placed work
5,494 -> 5,522 and 48,629 -> 48,649.
Since stop 32 a member of k whole nodes (a multi-node job) takes part in that step too (it
fills k node-alone slots, one member in the rows), and a component of one node class with
more than MAX_SHAPES shapes skips the pattern model but takes the one-more dives, their
LPs priced greedily first (configs._priced_greedy, the knapsack only where that finds no
column) with up to dive.MANY_ROUNDS columns each. The audit's shared medium seed 0 (k8s/k0:
58 nodes, 20 held by multi-node jobs, 103 shapes, nearly full) had four jobs left out that
router's referee re-packed; 2 more placed (329,291 -> 330,319), 0 left out that fit. And on
a small component of several node classes, shapes that every exact try of the last step
left undecided get CP-SAT's per-node search again (greedy._deepened: every capacity row in
its LP, 0.5 deterministic s a try, restarted under seeds 0-3, 3 s a component): the
audit's justfit medium seed 0 (23 nodes under running work, 123 shapes, every GPU and all
but 31 CPUs taken) had six 20-CPU jobs left out that fit a packing differing from the
plan's on 17 nodes; one is placed (32,395 -> 32,437) and the rest are proven out. The
last step also passes over a component again, after the pattern step, if its pass added
members (the second skips what failed at the packing the first ended with, until it adds):
a class that found no room ended the tries of every class asking as much for good, though
later additions change the packing (the audit's running medium seed 0: 78 nodes under
running work, 440 jobs left out that router's referee re-packed one at a time; 245 -> 249
placed, 0 left out that fit). After the pattern step (which keeps what is placed, so a
member added before it can cost it its optimum: big small seed 2), regions that decided
nothing in their 0.02 deterministic s get a second try of up to 0.4 (region.Retry, 1 s a
component): the audit's manyparts medium seed 0, a 346-GiB job in a 12-node region of 33
kinds at 0.27. None of these paths adds anything at bench L seeds 0-2 or XL seed 0 (their
plans are the same bytes).

Since stop 33 the last fill ends with repairs (greedy._repaired, repair.py) on components
past TOPPED_NODES of several node classes and on one node class of more than MAX_SHAPES
shapes, after every other step (they only add; inside the last step's pass, smallest
first, they had taken room that later steps gave to more worth): the members still left
out, smallest first, get the regions if the pass did not try them, a per-node search of
0.1 deterministic s (most that do not fit are proven so, with every class asking as much),
then CP-SAT's large neighbourhood search from the plan's own packing: the per-node model
(pack.node_model) with the new member optional (z), the packing as the hint, objective
(N + 1)·z − Σ_n c_n (c_n: node n's counts differ from the plan's), LNS only, one worker,
interleaved (deterministic), stopped at the first solution with z = 1, 1 deterministic s a
try. Where nodes differ, a member often fits once 3-9 nodes trade pods, a packing the
roomiest-node regions miss and the per-node search finds only by the luck of its seed; the
LNS relaxes a few nodes of the hint at a time and finds it at 0.02-1.2 s. 3 deterministic
s a component, 9 a plan (greedy.Shares). The audit's justfit medium seed 1 (37 nodes in 36
classes: 20 jobs left out that its checker re-packed), mixed medium seed 1 (31 alike nodes
under 60-odd shapes: 3) and mig medium seed 1 (133 nodes in 42 classes: 13): 0 left out
that fit. No bench component is of either kind (their plans are the same bytes).

Since stop 34 a service's replicas take part in the node-pattern step and its dive
(configs.py): a member of k pods fills k pod slots of its shape (x_vc counts slots, as for
multi-node jobs, and the rows count members), where before a member of several pods kept
the whole component out (the audit's services medium seed 2, 54 alike L4 nodes under
services of 1-7 replicas: 14 left out that router's referee re-packed, 27 on the pool cut
out alone; 0 now). And the repairs leave out the per-node proof try once two in a row
decided nothing (it proves most that do not fit where it applies, but took 0.1 of the
0.23 s each placed member cost on shared medium seed 2, where there was nothing to prove:
9 left out when the budget ran out, 0 now); the regions are tried again on each new
packing, once for members alike. Bench L seeds 0 and 1 plan the same bytes, XL seed 0 the
same objective.

Since stop 35 a dive (dive.py) has one step a node plus DIVE_STEPS steps back, where it had
DIVE_STEPS in all: a step takes a pattern's integer part of z, at least one node, and on the
audit's awkward medium seed 1 (k8s/k2: 75 alike nodes, 73 shapes, so one-more dives only)
the LP's z were mostly below 1, every dive ran out of its 40 steps, and 47 jobs were left
out that router's referee re-packed one at a time (0 now; placed work 209,917 -> 209,973).
Bench L seeds 0 and 1 and the example plan the same bytes.

Since stop 36 a component of several node classes (running work gives each node its own free
capacity; targets over different node sets) ends with one more try (greedy._by_classes_last):
members left out added one at a time where a dive on the LP of node patterns per class packs
them (classdive.py: min Σ slack, patterns priced per class, the dive of dive.py over classes),
the component laid out afresh. Router's referee, given such a dive of its own
(router/plan/classes.py), had found on the audit's running medium seed 0 174 jobs left out
that re-pack one at a time (a dozen jobs moved over 9 of 78 nodes in 42 classes, beyond the
regions' and ejections' reach), 5 on running ci seed 1, 2 on shared medium seed 2, 4 on
slurmx medium seed 0: 0 now, placed work 19,918 -> 20,038 on running seed 0. It runs last
so that it only adds (among the earlier steps it changed their path: 19,856), a dive at most
CLASS_DIVE_LPS of the CLASS_LPS. Bench L seeds 0 and 1 and the example plan the same bytes.

Since stop 37 those dives cost a fifth of what they did: each try starts from the columns
of the try before it (configs.Carried; a member more changes the demand, not what fits a
node), a class's exact knapsack is skipped where a Lagrangian bound shows it cannot price
a column in (configs._worth_bound), and a dive first fixes every column's integer part at
once (one LP, not one a node, where most z are whole). slurmx medium seed 2 planned in
227 s, under a minute now; with the LPs so spared, mig medium seed 1 leaves out none of
what router's referee re-packs one at a time (17 before; placed work 871,426 -> 871,531).

Since stop 38 a one-more dive (dive.py) first takes a batch of the patterns of largest z at
once (each on its integer part or one node, while it still covers half of what it would
alone, up to half of the nodes left), starts from the columns of the dives before it, and
one whose first LP ran out of pricing rounds is tried again for the same member, not
counted as a shape that does not fit. On the audit's awkward medium seed 2 (k8s/k0 and
k1: 114 and 60 alike nodes, 176 and 133 shapes) that first LP needs 300-600 rounds from
the nodes' own patterns, and four dives that ran out so had spent each component's 1,000
LPs before any member was really tried: placed work 466,056 -> 469,532 there, 209,973 ->
210,293 on awkward medium seed 1 (673 -> 682 placed); the sweeps' 43 other medium
platforms, bench L seeds 0 and 1 and the example plan as before.

Since stop 39 a one-more dive's "no" is a proof: where the pricing knapsack is CP-SAT's and
it stops at its limit without proving that no pattern is worth more than 1, the dive's LP
is taken only at Farley's bound (its value divided by CP-SAT's upper bound on that worth,
or the Lagrangian one; configs._dive_price, dive._generated), and an integral LP solution
ends a dive only within the nodes left. Before, a pricing that found nothing in its limit
passed for converged, and the LP over the columns so far could say "no" to a member that
fits (tests/solve/test_dive.py: 30 jobs that pack onto 15 nodes, "no" from columns of one
job each). On the audit's awkward platforms every pricing was proven (463 and 659 CP-SAT
calls on seeds 1 and 2, all OPTIMAL): plans as before.

Since stop 41 the one-more dives' tries (configs.ONE_MORE_TRIES) count only dives that fail
after their first LP fitted: a first LP's "no" is a proof in a few LPs, and a dive that adds
its member is what the tries are for; LPs bound the whole (1,000 a component, as before).
On awkward medium seed 1's p1 (120 alike nodes, 247 shapes) the 32 tries had gone on 29
such "no"s of the heaviest members and 3 successes, and the planner's own dive, asked about
each shape left out, packed 25 of them in 13-400 LPs.

Since stop 42 a member the one-more LPs did not reach is not counted as failed (that ended
the tries of every shape asking as much), and where they ran out the members left get a last
look (configs.LAST_LOOK_LPS, at most LAST_LOOK_DIVE a dive). On p1 the 1,000 LPs went on 4
successes of 80-227 LPs and "no"s before members of worth 50 or less were tried; from the
final plan router's own dive packed 8 of those jobs one at a time (tests/pack/audit_dive.py),
which the referee's 2 s had left undecided. The last look places one of them, w895.

How it is solved (see aggregate.py, decompose.py, greedy.py)
----------------
The model splits into independent components (connected parts of the class–target graph
joined by quota and spread rows and by shared nodes), solved apart. Each component's first
level starts from the greedy first-fit-decreasing plan as a complete hint — greedy places each
member on real nodes (greedy.Filler), so the hint packs and the plan is never below the greedy
baseline — and each later level from the previous level's solution; a level never ends worse
than its hint. The first hint is, per component, the better of greedy and the LP optimum
rounded down, fitted to the nodes (least worth out first) and completed greedily (lp.py,
greedy.py), made (with the component's LP, whose optima add up to the bound reported) in the
process that solves the component: they were 0.3 s of one core before the solve at bench
L, with the other idle. Where greedy and the rounded LP are chosen per component, a
component can start from the better of the two where the whole plan's choice was the
other (bench L seed 1: one of four components, greedy there; its plan came out the same). When
re-planning with a previous plan, the hint puts planned work back where it was as far as it
fits, then completes it greedily (preempt.py), so the search starts from the stable answer.
The plan's node assignment (which node holds each pod) is a fresh packing of the solver's
counts, completed and re-packed by the last fill, so the same counts always get the same
nodes.

Determinism: each component is solved by one sequential CP-SAT search (num_workers = 1, a
fixed seed) under deterministic time limits (auto_limit by the model's size, or
SolveOptions.deterministic_limit, for level 1; seven times that for stability, a quarter of
it for the others in small components; shared among the components by size), never
wall-clock ones. Each component is solved and then given the last fill (they share no row
and no node) in one of up to `workers` forked children (fork.run_parts through
greedy.solved_and_completed), each sending back its solve's results, counts and packings:
the same plan for any worker count, and no component waits for the others' solves (they
were threads before, then one fill after all of them: at bench L seed 0 the last solve
ended 0.45 s after the first, and a fill of 1.2-1.5 CPU s began only then). Without
nodes (no last fill) the components are solved on `workers` threads. (One fill over the
whole model ran its passes until no component changed; a component now stops at its own
last change, which is the same unless a pass that changes no count re-lays a packing: see
greedy.completed.) (The sequential LP-based search reaches 99.99% of the LP bound at L
where CP-SAT's interleaved portfolio reached 99.4-99.7% in twice the time: its LNS batches
starve it.) A level that stops at its limit keeps the value it reached (≥ its hint) and
the status says FEASIBLE.

Large components (more than SMALL_COMPONENT aggregate variables)
----------------
Measured at bench L (seeds 0-2, 10k workloads, 4 components of 2,500-3,000 variables,
CPU seconds with --workers 1; wall time there is that of whatever else runs):
* Their lower levels (rank, preference, gpu_nodes, tie-break) are not given to CP-SAT. With
  a quarter of level 1's budget (0.11-0.13 deterministic s) all 12 of those solves ended
  UNKNOWN: presolve alone used the budget; without presolve and with 0.2 s each they still
  found nothing that packs (a better rank moves work onto full targets that the aggregate
  rows admit and the nodes do not). They cost 2.4 CPU s for nothing. Instead the last fill
  (greedy.completed) moves placed members to candidates they prefer where rows and nodes
  have room (greedy.moved_up): rank 575 / 802 / 874 -> 7 / 68 / 39, preference and gpu_nodes
  about the same, placed work unchanged by it. Small components still solve every level
  exactly (and cut until they pack), so their OPTIMAL stays per-node exact.
* Level 1 runs without CP-SAT's hint-guided first phase (hint_conflict_limit = 0): the hint
  is complete and already the first solution, and that phase spent ~0.1 s to gain a few
  units; without it the LP-based search's first solution past the hint comes at 0.10-0.15
  s (one component: 1,315,544 at 0.15 s against 1,315,326 at 0.45 s with it).
* Level 1 stops once its value is within LARGE_GAP (0.1%) of CP-SAT's own bound
  (relative_gap_limit; a deterministic stop, since the one search thread meets the same
  solutions and bounds in the same order). CP-SAT says OPTIMAL then; the level says
  FEASIBLE unless the value meets the bound. At L seed 0 the four components' solves went
  from 0.18-0.22 deterministic s (all of their budget; 0.8-1.0 wall s each, 3.7 CPU s in
  all) to 0.07-0.12 (0.2-0.5 wall s, 1.35 CPU s): three ended at the same value, one 206
  below it (1,295,530 against 1,295,736 at 0.22 s), and the plan's placed work went from
  11,921,839 to 11,921,715 (ratio_to_lp 0.999886 -> 0.999875), unpackable targets and
  falsely unplaced workloads still 0.
* From LIGHT_PRESOLVE_FROM (2,000) variables, presolve makes one pass and does no probing
  (max_presolve_iterations = 1, cp_model_probing_level = 0). Its full passes were half of
  level 1's time: replaying L seed 0's four level-1 models, 1.63 -> 0.76 CPU s (0.41 ->
  0.25 deterministic s), and the four values found rose from 11,921,173 to 11,921,839
  (without presolve at all: 0.60 CPU s, 11,919,469). The plans' placed work, seeds 0 / 1 /
  2: 11,921,715 -> 11,921,707 / 7,423,211 -> 7,423,647 / 11,546,239 -> 11,545,351, every
  bench check still 0. Below 2,000 the full presolve stays: the audit's slurmx-m2 (one
  component of 1,565 variables) placed 2 more jobs with the light one, but packed its CPU
  nodes so tightly that the referee could not decide 4 of the jobs left out.
* auto_limit is variables / 14,000 (0.8 s at L, was / 6,000: 1.87 s): past the first
  improving solution, more time bought < 0.01% of the LP bound, since the solution is then
  repaired to pack anyway (ratio_to_lp at L budgets 0.6 / 0.8 / 1.0 s, seed 0: 0.99951 /
  0.99946 / 0.99943; seed 1: 0.99972 at 0.7 and 1.0; seed 2: 0.99980 / 0.99980 / 0.99979,
  measured before the last fill packed by plain first fit).
  Below about 0.04 s per 1,000 variables a component stays at its hint (0.4 s at L seed 0:
  0.9969), so this keeps a factor of two.
* The per-workload rows are expanded on first read (problem.Problem), and cyclic garbage
  collection is paused while the model is built and solved (paused.py): the model stage
  went from 0.8-1.0 to 0.2 CPU s at L.
* The last fill makes every large component's counts pack by plain first-fit decreasing
  afresh (greedy._fresh): the independent checker then finds a packing at once, where at L
  seed 0 it left one 25-node target undecided in its 5 s. Then every capacity component is
  re-packed vector-aware with its unplaced members (greedy._rebalanced, pack.balanced):
  one of at most 16 nodes keeps that packing (the checker's exact search decides those at
  once), a larger one only the added members that plain first fit still packs (keeping
  the re-packing on 25 and 28 nodes left both undecided). At L seeds 0 / 1 / 2 (the
  referee, router/plan/admits.py): falsely unplaced 947 / 144 / 130 -> 312 / 19 / 42 (all
  "re-packed": each alone fits an exact re-packing, most not together; 137 of seed 0's
  on one 9-node target with 160 GiB left), unplaced 1,726 / 1,483 / 1,383 -> 1,338 /
  1,358 / 1,296, ratio_to_lp 0.99942 / 0.99969 / 0.99979 -> 0.99977 / 0.99981 / 0.99984,
  solve CPU s about the same (2.7 / 3.0 / 2.8 -> 3.3 / 2.9 / 2.4, --workers 1, a loaded
  machine); undecided and unpackable targets 0. The fill's fresh first-fit retries
  (Filler.repack) are off there: the re-packing finds more, for less.
* The last step (greedy._topped: insertion with ejection, then an exact packing with one
  more member) ran on components of at most 20 nodes only at first (lifted below). On larger
  ones too, it placed 240 more at L seed 0 and cut falsely unplaced from 312 to 27 (71
  left undecided by the referee), but the checker then left 2 of the 4 targets it filled
  undecided in its 5 s (of 21-28 nodes: tight packings that it does not find afresh), and
  the solver's own exact search afresh did not tell which (it found none for one that the
  checker decided, and one for one that it did not). At L seeds 0 / 1 / 2, as kept:
  falsely unplaced 312 / 19 / 42 -> 306 / 0 / 0, unplaced 1,338 / 1,358 / 1,296 -> 1,332 /
  1,341 / 1,293, ratio_to_lp 0.99977 / 0.99981 / 0.99984 (the same), router.plan CPU s
  with --workers 1 4.54 / 4.49 / 3.05 -> 4.66 / 4.64 / 3.31 (back to back; +0.45-0.54 on
  a loaded machine). What stays falsely unplaced is on CPU partitions of 21-28 nodes (seed
  0: hpc-r0-2/cpu 115, hpc-r1-2/cpu 57, hpc-r3-8/cpu 134), each member fitting a
  re-packing alone.
* Stop 18: components of 17-64 nodes keep the vector-aware re-packing and take the last
  step's insertion with ejection too (its exact packing stays on those of at most 20
  nodes, at 0.1 deterministic s). The checker's own search then leaves 3 of L seed 0's
  targets undecided, but the plan's node assignment, checked node by node, is a packing of
  each (bench: undecided_targets 0, undecided_by_search 3). At L seeds 0 / 1 / 2: falsely
  unplaced 306 / 0 / 0 -> 36 / 0 / 0 (seed 0: 34 on hpc-r0-6/cpu), unplaced 1,332 -> 1,078
  at seed 0 (1,341 / 1,293 unchanged), ratio_to_lp 0.99977 -> 0.99988, router.plan CPU s
  with --workers 1 at seed 0 4.3 -> 5.1.
* The exact packing (pack.exact_packing) searches depth first in first-fit-decreasing
  order (largest kinds first, each on the first node, as many as fit): on 4 nodes with 22
  CPU jobs of distinct sizes filling 1016 of 1024 GiB its default search found no packing
  in 5 s, this one at once (tests/pack/test_found.py); bench L is unchanged by it.
* Stop 19, the levels' packing checks (pack.pack): CP-SAT's own search first (half the
  limit), the depth-first order only where it decided nothing, and at most CUT_BUDGET
  deterministic seconds of checks per component before it stops cutting and repairs: the
  audit's slow-awkward-20 (60 awkward jobs, one partition of 20 nodes) spent 37 CPU s in
  21 rounds of cuts and 196 depth-first checks, now 14-15 CPU s with the same plan (41
  placed, objective 17,904); bench L and the example unchanged, byte for byte.
* Stop 20, the rounds of cuts. On awkward platforms the aggregate rows are far above what
  packs (slow-awkward-20: the first solution 18,812, plans that pack ~17,950) and the cuts
  close it by 2 units a round: cores of ~21 of 46 members (a full deletion filter), so the
  rounds never converge and only their cost counts. Now: (1) each round's solution is
  repaired (benders.Nodes.repair, then greedy completion) and the best kept (there: 17,904
  after 21 rounds before; the best of 4 rounds 17,949, 41 placed as before); (2) the rounds
  stop when they stall (_stalled: after STALL_ROUNDS, when the rate at which they lowered
  the level's value would not reach the best repaired plan in the rounds left), or when a
  solve again ends at its limit (its value is no bound then); (3) one budget per component
  (CUT_BUDGET 1 deterministic s, was 4 for the checks alone) for the exact checks, the
  deletion filters and the solves again after cuts (a deterministic second of these costs
  2-4 CPU s); (4) the filter leaves out runs of the smallest members (halved when the rest
  packs) at TRIAL_LIMIT 0.2 s a check, stops at the first undecided one (an awkward 29-node
  pool: seven undecided 2 s trials had cost 18 CPU s for one cut), and answers by dominance
  (counts at least a proven-unpackable set's do not pack, at most a packable one's do).
  slow-awkward-20: 189 exact searches (3.7 det s, 12.7 CPU s) -> 20 (0.64 det s), router
  plan 15-19 -> 2.9-4 CPU s (in process / a subprocess on a loaded machine), objective
  17,904 -> 17,949, FEASIBLE (tests/solve/test_benders.py). The audit's awkward family with
  8-32 nodes per component (tests.pack.audit's awkward() with its sizes widened), router
  plan --workers 1, user CPU s on a loaded machine, main -> this: seeds 7 / 0 / 11: 28.8 /
  15.0 / 27.9 -> 7.4 / 6.5 / 10.8; placed 65 / 108 / 77 -> 65 / 108 / 76 (objective 3,328 /
  18,266 / 48,579 -> 3,335 / 18,266 / 48,042: seed 11 lost one job with the rounds it no
  longer runs). What is left there is mostly the master's first solve (0.5 det s, ~2 CPU s)
  and the last step's exact tries (greedy._topped, patterns.py: 1.4-5 CPU s). Bench L seeds
  0 and 1 and the example byte for byte as before, seed 2 the same objective (ratio_to_lp
  0.999841); tests.pack.unseen for 3 minutes: 2,148 platforms, 0 findings, 0 undecided.
* Stop 19, the last step: its exact try searched depth first in first-fit-decreasing order
  with identical nodes in load order (as pack.exact_packing did for the levels'
  packing checks) and found none of bench L seed 0's tight re-packings in 0.1 deterministic
  s (10 and 9 nodes of 128 CPUs / 512 GiB, memory full to within one 64 GiB job); CP-SAT's
  own search with neither finds most at once (a complete hint of the current packing was
  tried: it found fewer in the same limit), and node patterns (patterns.py: maximal
  patterns, cutting-stock counts, at most 3,000) decide most of the rest either way.
  Insertion with ejection tries each node signature (free amounts, pod kinds) and pod kind
  once: its depth-2 search had run out of its 20,000 steps on 21-25 identical nodes, and
  now ends within them (chains of depth 3 found nothing more at 7-15 times the steps).
  The exact try reaches components of 32 nodes (was 20): at 20 the referee left 30 of
  seed 0's workloads on hpc-r0-4/cpu (25 nodes) undecided; at 32 it takes one more there
  and the referee proves the rest out. At L seeds 0 / 1 / 2: falsely unplaced 36 / 0 / 0 ->
  0 / 0 / 0, unplaced 1,078 / 1,341 / 1,293 -> 1,073 / 1,341 / 1,293, ratio_to_lp 0.99988 /
  0.99981 / 0.99984 -> 0.99989 / 0.99981 / 0.99984, referee undecided, unpackable and
  undecided targets 0; M seeds 0-2: 0 falsely unplaced before and after; tests.pack.unseen
  for 5 minutes: 4,493 platforms, 12,781 targets, 0 findings, 0 undecided. CPU s
  with --workers 1 at L seed 0, back to back: the last fill (greedy.completed) 1.69 / 1.62
  -> 1.46 / 1.48, its last step 1.24 / 1.20 -> 1.04 / 1.04 (exact tries 0.96 -> 0.48 +
  0.44 for patterns, insertion 0.22 -> 0.09), router.plan 5.2 about the same. XL seed 0:
  placed 85,609 -> 85,634, the last step 5.9 -> 4.1, the last fill 11.4 -> 9.4.
* Level 1 of a large component checks its solutions by first fit only (no exact search):
  it repairs at once and adds no cuts, so the exact search would only spend its limit.
Together, at L seeds 0 / 1 / 2 (before -> after): LP, hints, CP-SAT and fill 8.6 / 8.7 /
7.0 -> 3.0 / 2.9 / 2.1 CPU s (component solves 0.55 CPU s each, side by side with 2
workers), deterministic time 3.5 / 3.4 / 2.9 -> 0.80 / 0.78 / 0.58, ratio_to_lp 0.99949 /
0.99975 / 0.99971 -> 0.99942 / 0.99969 / 0.99979, rank 575 / 802 / 874 -> 7 / 68 / 39.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from router.evaluate.evaluate import Candidate
from router.gcpause import paused_gc
from router.solve.aggregate import Aggregate
from router.solve.decompose import Component, components
from router.solve.exact import solve_exact
from router.solve.greedy import best_hint, previous_hint
from router.solve.problem import Problem

SEED = 0
LOWER_LEVEL_SHARE = 0.25  # of SolveOptions.deterministic_limit, for rank, preference, tie-break
# Stability (only with a previous plan) gets seven times level 1's budget, as much as the
# three times it had before auto_limit went from variables / 6,000 to / 14,000: GitOps
# reviewers read every move, and with it the level usually proves its optimum at 10k
# workloads.
STABILITY_SHARE = 7.0
DEFAULT_WORKERS = 4
# A large component's level 1 repairs at once when its solution does not pack, and its other
# levels keep the previous level's plan: each solve costs as much as the rest of the plan,
# and cuts on vector packing are weak (bench L: a round of cuts and a solve more reached
# 99.963% of the LP bound, repairing at once 99.964%, in less time). Small components (the
# cuts are still added) solve again until they pack, so their OPTIMAL is per-node exact.
CUT_ROUNDS = 0
SMALL_COMPONENT = 300  # aggregate variables
SMALL_ROUNDS = 20
# Deterministic seconds per solver component of exact packing checks (the deletion filters'
# too) and of the solves again after cuts, before it stops cutting (the audit's
# slow-awkward-20: 60 awkward jobs on 20 nodes spent 46 CPU s in 21 rounds of cuts, 196
# checks; the best repaired plan is kept, the last fill takes what still fits, FEASIBLE).
# One deterministic second of these costs 2-4 CPU s.
CUT_BUDGET = 1.0
STALL_ROUNDS = 3  # rounds of cuts before their rate is judged (_stalled)
RETRY_SHARE = 0.5  # of a level's budget, for each of those solves
POLISHED = ("rank", "preference", "gpu_nodes", "tie_break")
HINT_CONFLICTS = 0
# A large component's level 1 stops once its value is within this share of CP-SAT's own
# bound (relative_gap_limit; see "Large components"). CP-SAT then says OPTIMAL: the status
# kept is FEASIBLE unless the value meets the bound.
LARGE_GAP = 0.001
# From this many aggregate variables, a component's presolve makes one pass, without
# probing (see "Large components").
LIGHT_PRESOLVE_FROM = 2000


def auto_limit(variables: int) -> float:
    """Level 1's deterministic budget for a model of `variables` aggregate variables: 0.5 s
    up to 7,000, then growing with them (0.8 s at bench L's 11k), at most 10 s. Level 1's
    search finds its first solution past the hint at about 0.04 s per 1,000 variables of a
    component (bench L: 0.10-0.12 s for 2,700); this is twice that, and more gained < 0.01%
    of the LP bound (see the module docstring)."""
    return min(10.0, max(0.5, variables / 14000))


@dataclass
class SolveOptions:
    workers: int = DEFAULT_WORKERS
    # level 1's budget in CP-SAT's deterministic seconds (see the module docstring), shared
    # among independent components by size; None: by the model's size (auto_limit)
    deterministic_limit: float | None = None
    previous: dict[str, str] = field(default_factory=dict)  # workload -> target id


@dataclass
class LevelReport:
    name: str
    status: str
    value: int
    bound: int


@dataclass
class SolveResult:
    assignment: dict[str, Candidate]  # workload name -> chosen candidate
    status: str  # OPTIMAL | FEASIBLE | INFEASIBLE | MODEL_INVALID | UNKNOWN | EMPTY
    objective: int
    bound: int
    levels: list[LevelReport]
    workers: int
    seed: int
    wall_seconds: float
    deterministic_time: float
    counts: list[int] = field(default_factory=list)  # per aggregate variable
    components: int = 0
    hint_objective: int = 0  # level 1 of the greedy hint
    # The LP relaxation's optimum (lp.py), the components' optima added; None if GLOP failed
    lp_bound: float | None = None
    deterministic_limit: float = 0.0  # level 1's budget, as given or by auto_limit
    # workload name -> (node set id, node index) per pod or whole node (benders.Nodes.assign)
    nodes: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # The levels' exact packing checks (benders.Nodes.packs): deterministic s and searches
    check_time: float = 0.0
    checks: int = 0

    @property
    def gap(self) -> float:
        if self.bound <= 0:
            return 0.0
        return max(0.0, (self.bound - self.objective) / self.bound)


def solve(problem: Problem, options: SolveOptions | None = None) -> SolveResult:
    """Solve `problem` level by level; see the module docstring."""
    agg = problem.aggregate
    if agg is None:
        raise ValueError("the problem has no aggregated form; build it with build_problem")
    return solve_aggregate(agg, options)


@paused_gc()
def solve_aggregate(
    agg: Aggregate, options: SolveOptions | None = None, hint: list[int] | None = None
) -> SolveResult:
    """Solve the aggregated model level by level (the module docstring), from `hint` if it
    is given (e.g. previous_hint), else from each component's best_hint; the LP bound of
    every component is solved beside it."""
    from router.solve import lp
    from router.solve.lp import component_lp, lp_solve

    opts = options or SolveOptions()
    started = time.perf_counter()
    nodes = agg.nodes
    in_parts = nodes is not None and bool(agg.variables)
    lp_bound: float | None = None
    if hint is None:
        hint = previous_hint(agg)
    if not in_parts:
        lp_bound, lp_values = lp_solve(agg)
        if hint is None:
            hint = best_hint(agg, lp_values)
    else:
        lp.load()  # before the components' children are forked
    # Every hint packs node by node (greedy.Filler); one that does not is repaired here.
    # Without one yet, each component's is made where it is solved (solved(k) below).
    counts = (
        (nodes.fit(hint) if nodes is not None else list(hint))
        if hint is not None
        else [0] * len(agg.variables)
    )
    given = hint is not None
    comps = components(agg)
    comp_of = [0] * len(agg.variables)
    for k, comp in enumerate(comps):
        for v in comp.variables:
            comp_of[v] = k
    # Level terms per component, so each component's model reads only its own.
    level_terms = [[[] for _ in comps] for _ in agg.levels]  # type: list[list[list[tuple[int, int]]]]
    for li, level in enumerate(agg.levels):
        for c, v in level.terms:
            level_terms[li][comp_of[v]].append((c, v))

    names = [lv.name for lv in agg.levels]
    value = [0] * len(names)
    bound = [0] * len(names)
    optimal = [True] * len(names)
    det_time = 0.0
    total = max(1, len(agg.variables))
    budget = (
        opts.deterministic_limit
        if opts.deterministic_limit is not None
        else auto_limit(len(agg.variables))
    )

    def run(k: int) -> tuple[list[tuple[int, int, bool]], float]:
        comp = comps[k]
        limit = budget * len(comp.variables) / total
        limit = max(limit, min(budget, 0.1))
        terms = [level_terms[li][k] for li in range(len(names))]
        return _solve_component(agg, comp, terms, counts, limit)

    packings = None
    check_time, checks = 0.0, 0
    hint_objective = 0
    if in_parts:
        assert nodes is not None
        # Whatever still fits next to the plan, node by node, goes in (greedy, best worth
        # first): a level that stopped at its limit or was repaired leaves none of it out.
        from router.solve.greedy import solved_and_completed

        # Large components' lower levels are polished there (see the module docstring).
        polish = frozenset(
            g for comp in comps if len(comp.variables) > SMALL_COMPONENT for g in comp.groups
        )

        def solved(
            k: int,
        ) -> tuple[list[tuple[int, int, bool]], float, float, int, tuple[float | None, int]]:
            comp = comps[k]
            bound, values = component_lp(agg, comp)
            if not given:
                own = nodes.fit(best_hint(agg, values, comp.groups))
                for v in comp.variables:
                    counts[v] = own[v]
            mine = set(comp.variables)
            start = sum(c * counts[v] for c, v in agg.levels[0].terms if v in mine)
            per_level, det = run(k)
            caps = {agg.cap_of[v] for v in comp.variables}
            spent = sum(nodes.spent[ci] for ci in caps)
            return per_level, det, spent, sum(nodes.searches[ci] for ci in caps), (bound, start)

        # Per component (no shared rows or nodes), each solved and then completed in one
        # forked child, side by side: none waits for the others' solves.
        parts = [comp.groups for comp in comps]
        # `counts` ends holding the solved counts, `filled` the completed ones.
        filled, packings, got = solved_and_completed(
            agg, counts, polish, parts, opts.workers, solved
        )
        outcomes = [(per_level, det) for per_level, det, _, _, _ in got]
        check_time = sum(spent for _, _, spent, _, _ in got)
        checks = sum(n for _, _, _, n, _ in got)
        # Added in component order, as lp_solve adds them: the same float.
        known = [b for *_, (b, _) in got if b is not None]
        lp_bound = sum(known) if len(known) == len(got) else None
        hint_objective = sum(s for *_, (_, s) in got)
    else:
        hint_objective = sum(c * counts[v] for c, v in agg.levels[0].terms) if agg.levels else 0
        # Components are independent and each is solved by one deterministic search thread,
        # so they can run side by side (CP-SAT releases the GIL): the same plan for any count.
        with ThreadPoolExecutor(max_workers=max(1, opts.workers)) as pool:
            outcomes = list(pool.map(run, range(len(comps))))
        filled = counts
    for per_level, det in outcomes:
        det_time += det
        for li, (v, b, opt) in enumerate(per_level):
            value[li] += v
            bound[li] += b
            optimal[li] = optimal[li] and opt
    if filled != counts:
        counts[:] = filled
        optimal = [False] * len(names)
        for li, level in enumerate(agg.levels):
            value[li] = sum(c * counts[v] for c, v in level.terms)
            bound[li] = max(bound[li], value[li]) if level.sense > 0 else min(bound[li], value[li])
    reports = [
        LevelReport(n, "OPTIMAL" if optimal[li] else "FEASIBLE", value[li], bound[li])
        for li, n in enumerate(names)
    ]
    overall = "EMPTY" if not agg.variables else "OPTIMAL" if all(optimal) else "FEASIBLE"
    assignment: dict[str, Candidate] = {
        agg.routed[i].workload.name: c for i, c in agg.split(counts).items()
    }
    on_nodes = (
        {agg.routed[i].workload.name: n for i, n in agg.nodes.assign(counts, packings).items()}
        if agg.nodes is not None
        else {}
    )
    first = reports[0] if reports else LevelReport("placed_work", overall, 0, 0)
    return SolveResult(
        assignment=assignment,
        status=overall,
        objective=first.value,
        bound=max(first.bound, first.value),
        levels=reports,
        workers=max(1, opts.workers),
        seed=SEED,
        wall_seconds=time.perf_counter() - started,
        deterministic_time=det_time,
        counts=counts,
        components=len(comps),
        hint_objective=hint_objective,
        lp_bound=lp_bound,
        deterministic_limit=budget,
        nodes=on_nodes,
        check_time=check_time,
        checks=checks,
    )


def _solve_component(
    agg: Aggregate,
    comp: Component,
    terms: list[list[tuple[int, int]]],
    counts: list[int],
    limit: float,
) -> tuple[list[tuple[int, int, bool]], float]:
    """Solve one component's levels in order, updating its entries of `counts` (which start
    as a feasible hint); returns (value, bound, optimal) per level and the deterministic time
    used."""
    from ortools.sat.python import cp_model  # imported here: it alone costs ~0.75 s

    model = cp_model.CpModel()
    y = {v: model.new_int_var(0, agg.bound(v), "") for v in comp.variables}
    for g in comp.groups:
        vs = agg.choices[g]
        if len(vs) > 1:
            model.add(sum(y[v] for v in vs) <= len(agg.groups[g].members))
        if agg.floors and agg.floors[g]:
            model.add(sum(y[v] for v in vs) >= agg.floors[g])  # protected planned work
    for r in comp.rows:
        row = agg.rows[r]
        model.add(
            cp_model.LinearExpr.weighted_sum(
                [y[v] for _, v in row.terms], [c for c, _ in row.terms]
            )
            <= row.rhs
        )
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.random_seed = SEED
    # One sequential search: deterministic, and on these models far better per deterministic
    # second than the interleaved portfolio, whose LNS batches starve the LP-based search.
    p.num_workers = 1
    p.interleave_search = False
    if len(comp.variables) > SMALL_COMPONENT:
        p.hint_conflict_limit = HINT_CONFLICTS
    if len(comp.variables) >= LIGHT_PRESOLVE_FROM:
        p.max_presolve_iterations = 1
        p.cp_model_probing_level = 0
    det = 0.0
    out: list[tuple[int, int, bool]] = []
    stab = next((li for li, lv in enumerate(agg.levels) if lv.name == "stability"), -1)
    stays = terms[stab] if stab >= 0 else []
    stay_expr = cp_model.LinearExpr.weighted_sum([y[v] for _, v in stays], [1] * len(stays))
    # Levels above stability also count stays, scaled below one unit of their own value: the
    # same optimum, but among equal plans the search keeps workloads where they were.
    scale = sum(agg.bound(v) for _, v in stays) + 1
    nodes = agg.nodes
    caps = sorted({agg.cap_of[v] for v in comp.variables}) if nodes is not None else []
    cut_lits: list[tuple[Any, tuple[int, ...], int]] = []
    resolved = 0.0  # deterministic s of the solves again after cuts, all levels (CUT_BUDGET)
    # gpu_nodes and the tie-break are solved as one lexicographic objective (W·gpu + tie,
    # W above any tie-break sum): the same optimum as two solves, at the cost of one.
    names = [lv.name for lv in agg.levels]
    joined = {
        li: li + 1
        for li in range(len(names) - 1)
        if names[li] == "gpu_nodes" and names[li + 1] == "tie_break" and terms[li] and terms[li + 1]
    }
    for li, level in enumerate(agg.levels):
        ts = terms[li]
        if li - 1 in joined:
            continue  # solved with the level before
        partner = joined.get(li)
        if partner is not None:
            weight = sum(c * agg.bound(v) for c, v in terms[partner]) + 1
            ts = [(weight * c, v) for c, v in ts] + terms[partner]
        if not ts:
            out.append((0, 0, True))
            continue
        small = len(comp.variables) <= SMALL_COMPONENT  # solves are cheap: cut until it packs
        if li and not small and level.name in POLISHED:
            # A large component's lower levels are polished by the last fill (greedy.py):
            # CP-SAT found nothing there within any budget worth spending (see the docstring).
            for lv in (li,) if partner is None else (li, partner):
                got = sum(c * counts[v] for c, v in terms[lv])
                trivial = sum(
                    c * agg.bound(v) for c, v in terms[lv] if c * agg.levels[lv].sense > 0
                )
                out.append(
                    (
                        got,
                        max(trivial, got) if agg.levels[lv].sense > 0 else min(trivial, got),
                        False,
                    )
                )
            continue
        # Placed work and stability get the big budgets; the others polish a plan made.
        budget = limit * (
            1.0 if li == 0 else STABILITY_SHARE if level.name == "stability" else LOWER_LEVEL_SHARE
        )
        expr = cp_model.LinearExpr.weighted_sum([y[v] for _, v in ts], [c for c, _ in ts])
        current = sum(c * counts[v] for c, v in ts)
        biased = bool(stays) and li < stab
        m = scale if biased else 1
        goal = (
            m * expr + (stay_expr if biased else 0)
            if level.sense > 0
            else (m * expr - (stay_expr if biased else 0))
        )
        if level.sense > 0:
            model.maximize(goal)
        else:
            model.minimize(goal)
        reached = current
        found = None
        first_found: int | None = None  # the first round's value, before any cut
        # The best plan that packs seen so far: the hint, or a round's solution repaired.
        best_value, best_fix = current, None  # type: int, list[int] | None
        proven = True  # False once a solution had to be repaired or given up
        status = cp_model.UNKNOWN
        rounds = (
            (SMALL_ROUNDS if small else CUT_ROUNDS) if li == 0 else (SMALL_ROUNDS if small else 0)
        )
        # The levels below placed work start from a complete, feasible hint and only polish
        # it: presolve (which the packing cuts make longer) would eat their small budgets.
        p.cp_model_presolve = li == 0 or not cut_lits
        p.relative_gap_limit = LARGE_GAP if li == 0 and not small else 0.0
        for rnd in range(rounds + 1):
            p.max_deterministic_time = budget * (1.0 if rnd == 0 else RETRY_SHARE)
            model.clear_hints()  # type: ignore[no-untyped-call]
            for v in comp.variables:
                model.add_hint(y[v], counts[v])
            for b, alike, c in cut_lits:  # a complete hint: it packs, so it keeps every cut
                model.add_hint(b, sum(counts[v] for v in alike) <= c - 1)
            status = solver.solve(model)
            if status == cp_model.OPTIMAL and solver.objective_value != solver.best_objective_bound:
                status = cp_model.FEASIBLE  # stopped by the gap limit, not proven
            det += solver.deterministic_time
            if rnd:
                resolved += solver.deterministic_time
            found = None
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                break
            sol = {v: int(solver.value(y[v])) for v in comp.variables}
            found = sum(c * sol[v] for c, v in ts)
            old_stay = sum(counts[v] for _, v in stays)
            new_stay = sum(sol[v] for _, v in stays)
            # Never worse than the hint (the greedy plan, or the previous level's solution).
            if not (
                (found - current) * level.sense > 0 or (found == current and new_stay > old_stay)
            ):
                break
            trial = [0] * len(counts)
            for v in comp.variables:
                trial[v] = sol[v]
            # A large component repairs at once (no cuts): the exact search would only
            # spend its limit (2 s per check) where first fit already failed.
            bad = nodes.failing(trial, caps, exact=small) if nodes is not None else []
            if not bad:
                reached = found
                for v in comp.variables:
                    counts[v] = sol[v]
                break
            if first_found is None:
                first_found = found
            # Placed work: each round's solution repaired (benders.Nodes.repair, then greedy
            # completion) is a plan that packs; the best of them is kept if the cuts stop.
            if li == 0:
                fixed = _repaired(agg, comp, trial, bad)
                if fixed is not None:
                    value = sum(c * fixed[v] for c, v in ts)
                    if (value - best_value) * level.sense > 0:
                        best_value, best_fix = value, fixed
            # Some component does not pack: cut these counts off (benders.py), solve again.
            # (Only when it will be solved again: a cut costs packings to shrink.)
            # Past CUT_BUDGET of exact checks the component stops cutting and repairs: a
            # proof that counts do not pack can cost the whole check limit, every round.
            # It stops too when the cuts stall: at the rate they have lowered the level's
            # value so far, the rounds left would not bring it down to the best plan that
            # packs (slow-awkward-20: 2 units a round, 870 to go; see the docstring).
            left = CUT_BUDGET - sum(nodes.spent[ci] for ci in caps) - resolved
            # And when a solve again after cuts stops at its limit: its value is no bound
            # then, so the rounds could not end OPTIMAL, and each costs its whole limit
            # (an awkward platform of 13 + 32 nodes: 1 CPU s a round, values not falling).
            cutting = (
                rnd < rounds
                and left >= 0
                and (rnd == 0 or status == cp_model.OPTIMAL)
                and not _stalled(first_found, found, best_value, rnd, rounds, level.sense)
            )
            cuts = [nodes.cut(ci, trial, max(0.0, left)) if cutting else None for ci in bad]
            for cut in cuts:
                if cut is not None:
                    _add_cut(model, y, _lifted(agg, comp, cut), cut_lits)
            if not cutting or any(cut is None for cut in cuts):
                proven = False
                if best_fix is not None:
                    reached = best_value
                    for v in comp.variables:
                        counts[v] = best_fix[v]
                break
        # Placed work that the rounds did not prove: the node-pattern model (exact.py),
        # whose answer is kept only when proven optimal with a layout checked node by node.
        exact = None
        settled = proven and status == cp_model.OPTIMAL and reached == found
        if li == 0 and small and nodes is not None and partner is None and not settled:
            exact = solve_exact(agg, comp.variables, comp.groups, comp.rows, ts)
        if exact is not None and exact.value >= reached:
            for v in comp.variables:
                counts[v] = exact.counts[v]
            for ci, packing in exact.packings.items():
                nodes.remember(ci, counts, packing)
            reached = found = exact.value
            proven, status = True, cp_model.OPTIMAL
            best = reached
        elif status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            raw = solver.best_objective_bound
            best = math.floor(raw / m + 1e-9) if level.sense > 0 else math.ceil(raw / m - 1e-9)
        elif status == cp_model.INFEASIBLE and level.sense > 0:
            best = reached  # the cuts leave nothing better than what is reached
        else:
            # No bound from the solver: the trivial one (every count at its largest).
            best = sum(c * agg.bound(v) for c, v in ts if c * level.sense > 0)
        done = proven and status == cp_model.OPTIMAL and reached == found
        if partner is None:
            out.append(
                (reached, max(best, reached) if level.sense > 0 else min(best, reached), done)
            )
        else:  # both levels' own values; their bounds are the trivial 0 unless proven
            for lv in (li, partner):
                got = sum(c * counts[v] for c, v in terms[lv])
                out.append((got, got if done else 0, done))
        # Fix this level at what it reached before optimising the next one.
        model.clear_objective()  # type: ignore[no-untyped-call]
        model.add(expr >= reached if level.sense > 0 else expr <= reached)
    return out, det


def _stalled(first: int, now: int, best: int, rnd: int, rounds: int, sense: int) -> bool:
    """Whether the cuts, at the rate they have lowered the level's value over the rounds
    so far (at least STALL_ROUNDS), would not bring it down to `best` (the best plan that
    packs) in the rounds left."""
    if rnd < STALL_ROUNDS:
        return False
    gone = (first - now) * sense  # what the cuts took off the value so far
    gap = (now - best) * sense
    return gone * (rounds - rnd) < gap * rnd


def _lifted(
    agg: Aggregate, comp: Component, cut: list[tuple[int, int]]
) -> list[tuple[tuple[int, ...], int]]:
    """A no-good on class counts (benders.Nodes.cut) lifted to sums: whether members pack
    depends only on their Items and allowed node sets, so variables alike in both (one
    class on several targets over the same node sets, or several classes of one shape) are
    one term: Σ_{v ∈ G} y_v ≤ c_G − 1 for some group G, c_G the cut's counts in G summed.
    Unlifted, a component whose targets share node sets (shared3-s19: gpu, gpu-long and
    preempt on one node set) was cut one target permutation at a time, the value never
    fell, and the rounds stalled at FEASIBLE 19 % below the bound."""
    key = {v: (agg.cap_of[v], agg.items[v], agg.allowed[v]) for v in comp.variables}
    need: dict[tuple[int, Any, frozenset[str]], int] = {}
    for v, c in cut:
        need[key[v]] = need.get(key[v], 0) + c
    alike: dict[tuple[int, Any, frozenset[str]], list[int]] = {}
    for v in comp.variables:
        alike.setdefault(key[v], []).append(v)
    return [(tuple(alike[k]), c) for k, c in sorted(need.items(), key=lambda kc: min(alike[kc[0]]))]


def _add_cut(
    model: Any,
    y: dict[int, Any],
    cut: list[tuple[tuple[int, ...], int]],
    lits: list[tuple[Any, tuple[int, ...], int]],
) -> None:
    """Not all of these counts at once (benders.py): some Σ_{v ∈ G} y_v ≤ c_G − 1. Its
    literals go to `lits` (literal, G, c) so that hints can set them too."""
    mine = []
    for vs, c in cut:
        b = model.new_bool_var("")
        model.add(sum(y[v] for v in vs) <= c - 1).only_enforce_if(b)
        mine.append(b)
        lits.append((b, vs, c))
    model.add_bool_or(mine)


def _repaired(
    agg: Aggregate, comp: Component, trial: list[int], bad: list[int]
) -> list[int] | None:
    """The component's counts with the members least worth taken off each component that
    does not pack, then completed greedily on the real nodes (benders.Nodes.repair)."""
    from router.solve.greedy import first_fit_decreasing

    fixed = list(trial)
    for ci in bad:
        if not agg.nodes.repair(ci, fixed):
            return None
    return first_fit_decreasing(agg, fixed, groups=comp.groups, packed=True)

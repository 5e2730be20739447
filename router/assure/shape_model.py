"""Node-shape feasibility (evaluate/shape.py) as CP-SAT constraints, for `expect placed`.

shape.py decides how a job spreads over a target's nodes from what the user wrote: `nodes`
(then ceil(gpus / nodes) GPUs each), `gpus_per_node` (then gpus / gpus_per_node nodes), or
neither (the fewest nodes with an even split, `_spread`). The workload space of encode.py
reads back into a document in one of those three forms (`witness_document`), so the modes
here follow the document: nodes written when nodes_given and nodes >= 2; gpus_per_node
written when nodes are not given and it differs from gpus; otherwise neither. `_spread` is
not linear: it is a table indexed by the GPU count (AddElement), one per GPUs-per-node value.
A workload that writes `nodes: 1` explicitly is read as writing nothing (the spread form).

A partition's AllowAccounts / AllowQos / AllowGroups and MaxNodes (shape._partition_access,
`max_nodes_per_job`) are kept too. The space's workloads state no `account` (it is not a
field a policy reads), so a partition that allows only some accounts takes them exactly when
the route's `account`, else the partition's own, is listed: what shape.py decides for them.
"""

from __future__ import annotations

from typing import Any

from router.assure.encode import NUMBERS, OTHER, Space, witness_document
from router.evaluate.evaluate import Evaluator
from router.evaluate.shape import _spread
from router.models import Partition, TargetRef
from router.models.inventory import untolerated


class ShapeModel:
    def __init__(self, space: Space, ev: Evaluator) -> None:
        self.space, self.ev = space, ev
        m, ints = space.model, space.ints
        g, n, gpn = ints["gpus"], ints["nodes"], ints["gpus_per_node"]
        self.gmax = NUMBERS["gpus"][1]
        self.mode_b = space.all_of([space.nodes_given, self._ge(n, 2)])
        self.mode_c = space.all_of([space.nodes_given.Not(), self._ne(gpn - g)])
        self.mode_a = space.all_of([self.mode_b.Not(), self.mode_c.Not()])
        self.k = m.new_int_var(0, self.gmax, "gpus_over_gpn")
        m.add_multiplication_equality(g, [gpn, self.k])
        self.has_gpus = self._ge(g, 1)
        image_var, images = space.strings["image"]
        self.has_image = (
            self._ne(image_var - images.index(None)) if None in images else space.true()
        )
        self._tables: dict[int, Any] = {}
        self._cache: dict[tuple[str, str], Any] = {}

    # small reified helpers: a literal for `lin >= c`, `lin != 0`, and/or of literals
    def _ge(self, lin: Any, c: int) -> Any:
        b = self.space.model.new_bool_var("ge")
        self.space.model.add(lin >= c).only_enforce_if(b)
        self.space.model.add(lin < c).only_enforce_if(b.Not())
        return b

    def _le(self, lin: Any, c: int) -> Any:
        return self._ge(-lin, -c)

    def _ne(self, lin: Any) -> Any:
        b = self.space.model.new_bool_var("ne")
        self.space.model.add(lin != 0).only_enforce_if(b)
        self.space.model.add(lin == 0).only_enforce_if(b.Not())
        return b

    def _implies(self, cond: Any, lit: Any) -> Any:
        return self.space.all_of([cond, lit.Not()]).Not()

    def _spread_nodes(self, per_node: int) -> Any:
        """nodes = _spread(gpus, per_node)[0], as an element constraint."""
        if per_node not in self._tables:
            table = [1] + [_spread(x, per_node)[0] for x in range(1, self.gmax + 1)]
            var = self.space.model.new_int_var(1, max(table), f"spread_{per_node}")
            self.space.model.add_element(self.space.ints["gpus"], table, var)
            self._tables[per_node] = var
        return self._tables[per_node]

    def fits(self, ref: TargetRef, tv: dict[str, Any], options: dict[str, Any]) -> Any:
        """A literal: the workload's shape fits `ref` with the route's `options`."""
        key = (ref.id, repr(sorted(options.items())))
        if key not in self._cache:
            self._cache[key] = self._fits(ref, options)
        return self._cache[key]

    def _fits(self, ref: TargetRef, options: dict[str, Any]) -> Any:
        s, t, ints = self.space, ref.target, self.space.ints
        g, cpus, mem = ints["gpus"], ints["cpus"], ints["memory"]
        conds: list[Any] = []
        if ref.backend == "kubernetes":
            conds.append(self.has_image)  # Slurm: the runnable workload has a command
            # Taints (shape.py): a GPU taint needs GPUs, any other blocking one the rule's
            # `tolerate`.
            blocked = untolerated(getattr(t, "taints", []), True, options.get("tolerate") or ())
            if blocked:
                return s.const(False)
            if untolerated(getattr(t, "taints", []), False, options.get("tolerate") or ()):
                conds.append(self.has_gpus)
        if isinstance(t, Partition):
            access = self._access(t, options)
            if access is None:
                return s.const(False)
            conds.append(access)
            # OverSubscribe (shape._oversubscribe): FORCE ignores exclusive; EXCLUSIVE takes
            # no service (its array tasks would each take a whole node).
            mode = (t.oversubscribe or "").partition(":")[0]
            if mode == "force" and options.get("exclusive"):
                return s.const(False)
            if mode == "exclusive":
                conds.append(ints["service"].Not())
        mig = options.get("mig")
        offered = t.slices_per_node
        gpu_ok = (mig in offered) if mig else t.whole_gpus_per_node > 0
        if not gpu_ok:
            conds.append(self.has_gpus.Not())
        type_var, types = s.strings["gpu_type"]
        ok_types = [i for i, v in enumerate(types) if v in ("any", t.gpu_type) and v != OTHER]
        type_ok = self._or_eq(type_var, ok_types)
        conds.append(self._implies(self.has_gpus, type_ok))
        per = offered.get(mig, 0) if mig else t.whole_gpus_per_node
        if t.max_time is not None:
            if options.get("time"):
                if int(options["time"]) > t.max_time:
                    return s.const(False)
            else:
                conds.append(self._le(ints["duration"], t.max_time))
        cap = getattr(t, "max_nodes", None) or t.nodes
        if isinstance(t, Partition) and t.max_nodes_per_job is not None:
            cap = min(cap, t.max_nodes_per_job)  # one job's nodes: both bounds hold
        cpn, mpn = t.cpus_per_node, t.memory_per_node
        service = ints["service"]
        svc = [self._le(g, per), self._le(cpus, cpn), self._le(mem, mpn)]
        conds.append(self._implies(service, s.all_of(svc)))
        job = service.Not()
        # neither written: spread GPUs (or, with no GPUs, as many nodes as CPUs/memory need)
        spread = self._spread_nodes(per) if per > 0 else s.model.new_constant(1)
        a_gpu = s.all_of([self._ge(spread * cpn - cpus, 0), self._ge(spread * mpn - mem, 0),
                          self._le(spread, cap)])  # fmt: skip
        a_cpu = s.all_of([self._le(cpus, cap * cpn), self._le(mem, cap * mpn)])
        conds.append(self._implies(s.all_of([job, self.mode_a, self.has_gpus]), a_gpu))
        conds.append(self._implies(s.all_of([job, self.mode_a, self.has_gpus.Not()]), a_cpu))
        n = ints["nodes"]
        b_ok = s.all_of([self._ge(n * per - g, 0), self._ge(n * cpn - cpus, 0),
                         self._ge(n * mpn - mem, 0), self._le(n, cap)])  # fmt: skip
        conds.append(self._implies(s.all_of([job, self.mode_b]), b_ok))
        k = self.k
        c_ok = s.all_of([self._le(ints["gpus_per_node"], per), self._ge(k * cpn - cpus, 0),
                         self._ge(k * mpn - mem, 0), self._le(k, cap)])  # fmt: skip
        conds.append(self._implies(s.all_of([job, self.mode_c]), c_ok))
        return s.all_of(conds)

    def _access(self, t: Partition, options: dict[str, Any]) -> Any | None:
        """A literal: Slurm's access lists let the workload in; None when they never do."""
        account = options.get("account") or t.account
        if t.allow_accounts is not None and account not in t.allow_accounts:
            return None
        if t.allow_qos is not None and (options.get("qos") or t.qos) not in t.allow_qos:
            return None
        if t.allow_accounts is None and account in t.deny_accounts:
            return None
        if t.allow_qos is None and (options.get("qos") or t.qos) in t.deny_qos:
            return None
        if t.allow_groups is None:
            return self.space.true()
        team_var, teams = self.space.strings["team"]
        return self._or_eq(team_var, [i for i, v in enumerate(teams) if v in t.allow_groups])

    def _or_eq(self, var: Any, indexes: list[int]) -> Any:
        if not indexes:
            return self.space.const(False)
        lits = []
        for i in indexes:
            b = self.space.model.new_bool_var("eq")
            self.space.model.add(var == i).only_enforce_if(b)
            self.space.model.add(var != i).only_enforce_if(b.Not())
            lits.append(b)
        return self.space.any_of(lits)

    def document(self, w: dict[str, Any], name: str) -> dict[str, Any]:
        """The witness as workload YAML; the image is left to the runnable defaults unless the
        policy tests images (then an absent image is written as `image: null`)."""
        label = name.replace("_", "-").lower().strip("-")[:63] or "counterexample"
        doc = witness_document(self.space, w, label)
        _, images = self.space.strings["image"]
        if len(images) <= 2:
            doc.pop("image", None)
        elif w.get("image") is None:
            doc["image"] = None
        if doc.get("kind") == "batch":
            doc.pop("kind")
        return doc

"""The fidelity harness's workload: a small, deterministic, time-compressed trace, as CSV, SWF and
sacct.

Both replay.py (real Slurm) and compare.py (gpuplan) read the same files, so the two sides see the
same jobs. Times are whole seconds: ``sbatch --begin`` takes whole seconds and ``--time`` whole
minutes, so each job's time limit is a whole number of minutes and the SWF's requested time (field
9) is that limit in seconds, which is the estimate gpuplan's backfill uses.

Two generators: ``generate`` makes the whole-node, two-user traces of configurations a and b (its
random draws are unchanged, so a seed gives the trace recorded in results/); ``generate_shared``
makes the traces of configurations c and d, on nodes that jobs share: any number of users in any
number of accounts (``Population``), jobs of 1, 2, 4 or 8 GPUs on one node beside multi-node
whole-node jobs, optional CPU (``--cpus-per-task``) and memory (``--mem``) requests, a QoS and a
partition per job. ``write_sacct`` writes a trace as ``sacct --parsable2`` would list it, with its
users, accounts, partitions, QoS, CPUs and memory by name, which gpuplan's sacct reader reads.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

GPUS_PER_NODE = 8
PARTITION_NUMBER = {"gpu": 1, "batch": 1, "high": 2}  # SWF field 16
# The users and accounts of configurations c and d (setup.sh creates them): the shared sample's
# (issue 15), acct_a with alice and bob, acct_b with carol and dave. ``ACCOUNT:USER,USER;...``
DEFAULT_POPULATION = "acct_a:sim_alice,sim_bob;acct_b:sim_carol,sim_dave"


@dataclass(frozen=True)
class Job:
    job: int  # trace job number, 1-based, in submit order
    submit_s: int  # arrival (Slurm: --begin) relative to the replay start
    run_s: int  # sleep length
    nodes: int
    time_limit_min: int  # sbatch --time, whole minutes
    user: int  # 1-based; user k is local user gpuplan<k>, account team<k> unless named below
    partition: str
    # Configurations c and d (the defaults below are those of a and b's whole-node jobs, so their
    # trace.csv files read as before and are written with the seven columns above only)
    gpus_per_node: int = GPUS_PER_NODE  # sbatch --gres=gpu:N (per node)
    cpus_per_task: int = 0  # sbatch -c N (one task per node); 0: none asked (Slurm gives 1 CPU)
    mem_mb: int = 0  # sbatch --mem=N (MB per node); 0: none asked
    qos: str = ""  # sbatch --qos; "": none asked (the association's default QoS, normal)
    user_name: str = ""  # the local user who submits ("": gpuplan<user>)
    account_name: str = ""  # sbatch -A ("": team<user>)

    @property
    def account(self) -> str:
        return self.account_name or f"team{self.user}"

    @property
    def username(self) -> str:
        return self.user_name or f"gpuplan{self.user}"

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def cpus_per_node(self) -> int:
        """CPUs Slurm allocates on each node: one task per node, ``-c`` CPUs each (at least 1)."""
        return max(1, self.cpus_per_task)


# the columns of Job that configurations a and b never set (write_csv omits them when all default)
EXTENDED_FIELDS = ("gpus_per_node", "cpus_per_task", "mem_mb", "qos", "user_name", "account_name")
_DEFAULTS = {f.name: f.default for f in fields(Job) if f.name in EXTENDED_FIELDS}


@dataclass(frozen=True)
class Population:
    """Users and their accounts: ``users[k - 1]`` is trace user k, ``account_of[k - 1]`` its account."""

    users: tuple[str, ...]
    account_of: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Population:
        """``acct_a:alice,bob;acct_b:carol`` -> alice and bob in acct_a, carol in acct_b."""
        users: list[str] = []
        accounts: list[str] = []
        for group in filter(None, (g.strip() for g in text.split(";"))):
            account, sep, names = group.partition(":")
            members = [n.strip() for n in names.split(",") if n.strip()]
            if not sep or not account.strip() or not members:
                raise ValueError(f"expected ACCOUNT:USER,USER;ACCOUNT:USER..., got {text!r}")
            for name in members:
                if name in users:
                    raise ValueError(f"user {name} is listed twice in {text!r}")
                users.append(name)
                accounts.append(account.strip())
        if not users:
            raise ValueError(f"no users in {text!r}")
        return cls(tuple(users), tuple(accounts))

    @classmethod
    def generated(cls, users: int, accounts: int) -> Population:
        """``users`` users sim_u1... spread in blocks over ``accounts`` accounts acct_1..."""
        per = -(-users // accounts)
        return cls(
            tuple(f"sim_u{k}" for k in range(1, users + 1)),
            tuple(f"acct_{(k - 1) // per + 1}" for k in range(1, users + 1)),
        )

    def text(self) -> str:
        groups: dict[str, list[str]] = {}
        for user, account in zip(self.users, self.account_of, strict=True):
            groups.setdefault(account, []).append(user)
        return ";".join(f"{a}:{','.join(us)}" for a, us in groups.items())


def parse_weights(text: str) -> dict[str, float]:
    """``1x8:40,2x8:20`` or ``normal:80,high:20`` -> {key: weight}, in the order given."""
    weights: dict[str, float] = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        key, sep, weight = item.rpartition(":")
        if not sep or not key:
            raise ValueError(f"expected KEY:WEIGHT,KEY:WEIGHT..., got {text!r}")
        weights[key] = float(weight)
    if not weights or sum(weights.values()) <= 0:
        raise ValueError(f"no positive weight in {text!r}")
    return weights


def generate(
    n_jobs: int = 40,
    span_s: int = 150,
    seed: int = 1,
    config: str = "a",
    max_nodes: int = 4,
    run_range: tuple[int, int] = (5, 55),
    high_share: float = 0.25,
    node_weights: tuple[float, ...] | None = None,
) -> list[Job]:
    """``n_jobs`` jobs arriving over ``span_s`` seconds, 1..max_nodes whole nodes, runs in
    ``run_range`` seconds; time limits of whole minutes, ceil((run + 5 s) / 60 s) plus 0, 0, 1 or 2
    minutes, so no job meets its limit (Slurm checks limits only every ~30 s, gpuplan at the exact
    second). Configuration b sends ``high_share`` of the jobs to partition "high", the rest to
    "batch". ``node_weights`` (w1, w2, ...) draws k nodes with weight w_k instead of uniformly
    from 1..max_nodes."""
    rng = random.Random(seed)
    arrivals = sorted(rng.randint(0, span_s) for _ in range(n_jobs))
    jobs = []
    for k, submit in enumerate(arrivals, start=1):
        run = rng.randint(*run_range)
        base_min = -(-(run + 5) // 60)  # ceil
        limit = base_min + rng.choice((0, 0, 1, 2))  # users overestimate, some a lot
        # config a draws nothing here, so its traces stay those recorded in results/
        partition = "gpu" if config == "a" else ("high" if rng.random() < high_share else "batch")
        jobs.append(
            Job(
                job=k,
                submit_s=submit,
                run_s=run,
                nodes=(
                    rng.choices(range(1, len(node_weights) + 1), node_weights)[0]
                    if node_weights
                    else rng.randint(1, max_nodes)
                ),
                time_limit_min=limit,
                user=rng.randint(1, 2),
                partition=partition,
            )
        )
    return jobs


# The shapes of the shared sample (issue 15): nodes x GPUs per node, weights as counted in it
DEFAULT_SHAPES = "1x1:6,1x2:6,1x4:6,1x8:9,2x8:6,4x8:3"


def generate_shared(
    n_jobs: int = 40,
    span_s: int = 150,
    seed: int = 1,
    *,
    population: Population | None = None,
    shapes: dict[str, float] | None = None,
    run_range: tuple[int, int] = (5, 70),
    high_share: float = 0.15,
    qos_weights: dict[str, float] | None = None,
    cpu_weights: dict[str, float] | None = None,
    mem_weights: dict[str, float] | None = None,
) -> list[Job]:
    """The traces of configurations c and d: ``n_jobs`` jobs arriving over ``span_s`` seconds, each
    of a shape ``NxG`` (N nodes with G GPUs each; G < 8 only on one node) drawn by ``shapes``
    (default: the shared sample's mix), a run of ``run_range`` seconds, a time limit of whole minutes
    as ``generate`` draws it, a user drawn uniformly from ``population`` (default: the shared
    sample's four users in two accounts), partition "high" with probability ``high_share`` (else
    "batch"), a QoS by ``qos_weights`` (default: none asked), ``-c`` CPUs per task by ``cpu_weights``
    (keys are counts; 0 asks none) and ``--mem`` MB per node by ``mem_weights`` (0 asks none).
    Deterministic by ``seed``; its own stream of draws, so ``generate``'s traces are unchanged."""
    population = population or Population.parse(DEFAULT_POPULATION)
    shape_weights = shapes or parse_weights(DEFAULT_SHAPES)
    parsed_shapes = []
    for key in shape_weights:
        n_text, _, g_text = key.partition("x")
        nodes, gpus = int(n_text), int(g_text or GPUS_PER_NODE)
        if not (1 <= gpus <= GPUS_PER_NODE) or nodes < 1 or (nodes > 1 and gpus != GPUS_PER_NODE):
            raise ValueError(f"shape {key}: 1-{GPUS_PER_NODE} GPUs on one node, or N x {GPUS_PER_NODE}")
        parsed_shapes.append((nodes, gpus))
    rng = random.Random(seed)
    arrivals = sorted(rng.randint(0, span_s) for _ in range(n_jobs))

    def draw(weights: dict[str, float] | None, default: str) -> str:
        return rng.choices(list(weights), list(weights.values()))[0] if weights else default

    jobs = []
    for k, submit in enumerate(arrivals, start=1):
        run = rng.randint(*run_range)
        base_min = -(-(run + 5) // 60)  # ceil
        limit = base_min + rng.choice((0, 0, 1, 2))
        nodes, gpus = rng.choices(parsed_shapes, list(shape_weights.values()))[0]
        user = rng.randint(1, len(population.users))
        jobs.append(
            Job(
                job=k,
                submit_s=submit,
                run_s=run,
                nodes=nodes,
                time_limit_min=limit,
                user=user,
                partition="high" if rng.random() < high_share else "batch",
                gpus_per_node=gpus,
                cpus_per_task=int(draw(cpu_weights, "0")),
                mem_mb=int(draw(mem_weights, "0")),
                qos=draw(qos_weights, ""),
                user_name=population.users[user - 1],
                account_name=population.account_of[user - 1],
            )
        )
    return jobs


def write_csv(jobs: list[Job], path: Path) -> None:
    """One row per job; the columns of configurations c and d only when some job sets them."""
    names = [f.name for f in fields(Job)]
    if all(getattr(job, name) == _DEFAULTS[name] for job in jobs for name in EXTENDED_FIELDS):
        names = [n for n in names if n not in EXTENDED_FIELDS]
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=names, extrasaction="ignore")
        writer.writeheader()
        for job in jobs:
            writer.writerow(asdict(job))


def read_csv(path: Path) -> list[Job]:
    """A trace.csv of any configuration (columns missing in older files take their defaults)."""

    def extended(row: dict[str, str]) -> dict[str, int | str]:
        out: dict[str, int | str] = {}
        for name in EXTENDED_FIELDS:
            if row.get(name) not in (None, ""):
                out[name] = int(row[name]) if isinstance(_DEFAULTS[name], int) else row[name]
        return out

    with path.open(newline="") as src:
        return [
            Job(
                job=int(r["job"]),
                submit_s=int(r["submit_s"]),
                run_s=int(r["run_s"]),
                nodes=int(r["nodes"]),
                time_limit_min=int(r["time_limit_min"]),
                user=int(r["user"]),
                partition=r["partition"],
                **extended(r),  # type: ignore[arg-type]
            )
            for r in csv.DictReader(src)
        ]


def write_swf(jobs: list[Job], path: Path, nodes: int, run_s: dict[int, float] | None = None) -> None:
    """SWF with the same jobs: field 8 (requested processors) = the job's GPUs (nodes x GPUs per node;
    read with --gpus-per-node 8), field 9 (requested time) = the minutes-rounded --time in seconds,
    field 13 (group) = the account (a and b: the user), field 16 = partition number. CPUs, memory,
    QoS and names do not fit an SWF: ``write_sacct`` keeps them. ``run_s`` overrides field 4 (run
    time) per job, e.g. with the run times measured on the real Slurm."""
    named_accounts = sorted({j.account for j in jobs if j.account_name})
    lines = [
        "; gpuplan Slurm fidelity harness trace (bench/fidelity_slurm/workload.py)",
        "; Version: 2.2",
        f"; MaxNodes: {nodes}",
        f"; MaxProcs: {nodes * GPUS_PER_NODE}",
        "; Note: processors are GPUs; read with --gpus-per-node 8",
        "; Partition: 1 gpu/batch, 2 high",
    ]
    if named_accounts:
        lines.append(
            "; Note: groups are accounts " + ", ".join(f"{k} {a}" for k, a in enumerate(named_accounts, 1))
        )
    for job in jobs:
        run = job.run_s if run_s is None else run_s.get(job.job, job.run_s)
        procs = job.gpus
        group = named_accounts.index(job.account) + 1 if job.account_name else job.user
        row = [
            job.job,  # 1 job number
            job.submit_s,  # 2 submit time
            -1,  # 3 wait time
            run,  # 4 run time
            procs,  # 5 allocated processors
            -1,  # 6 average CPU time
            -1,  # 7 used memory
            procs,  # 8 requested processors
            job.time_limit_min * 60,  # 9 requested time
            -1,  # 10 requested memory
            1,  # 11 status
            job.user,  # 12 user id
            group,  # 13 group id (the account)
            -1,  # 14 executable
            -1,  # 15 queue
            PARTITION_NUMBER.get(job.partition, -1),  # 16 partition
            -1,  # 17 preceding job
            -1,  # 18 think time
        ]
        lines.append(" ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in row))
    path.write_text("\n".join(lines) + "\n")


SACCT_TRACE_FIELDS = (
    "JobID|JobName|User|Account|Partition|QOS|Submit|Eligible|Start|End|Timelimit|NNodes|NCPUS|"
    "ReqTRES|AllocTRES|State"
)


def sacct_time(epoch_s: float) -> str:
    """sacct's time format, of a Unix time in UTC (gpuplan reads sacct times as UTC)."""
    return datetime.fromtimestamp(epoch_s, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def tres(job: Job) -> str:
    """ReqTRES as Slurm 22.05 lists it for the job: CPUs of all nodes, GPUs, memory, nodes."""
    cpus = job.cpus_per_node * job.nodes
    mem = f",mem={job.mem_mb * job.nodes}M" if job.mem_mb else ""
    return f"billing={cpus},cpu={cpus},gres/gpu={job.gpus}{mem},node={job.nodes}"


def write_sacct(
    jobs: Iterable[Job],
    path: Path,
    t0: int,
    submitted_at: dict[int, float] | None = None,
    run_s: dict[int, float] | None = None,
) -> None:
    """The trace as ``sacct --parsable2 -X`` would list it had every job run once for its sleep:
    Submit = when sbatch ran (``submitted_at``, Unix seconds; default the arrival), Eligible =
    t0 + submit_s (later than Submit for a job submitted ahead with --begin), Start = Eligible and
    End = Start + run (gpuplan's sacct reader takes the run time from End - Start and nothing else
    from them), with users, accounts, partitions, QoS, CPUs and memory by name. Times in UTC.
    ``run_s`` overrides the run time per job (e.g. measured on Slurm)."""
    lines = [SACCT_TRACE_FIELDS]
    for job in jobs:
        eligible = t0 + job.submit_s
        submit = min(eligible, int((submitted_at or {}).get(job.job, eligible)))
        run = (run_s or {}).get(job.job, job.run_s)
        request = tres(job)
        lines.append(
            "|".join(
                str(v)
                for v in (
                    job.job,
                    f"gp{job.job}",
                    job.username,
                    job.account,
                    job.partition,
                    job.qos or "normal",
                    sacct_time(submit),
                    sacct_time(eligible),
                    sacct_time(eligible),
                    sacct_time(eligible + run),
                    f"{job.time_limit_min // 60:02d}:{job.time_limit_min % 60:02d}:00",
                    job.nodes,
                    job.cpus_per_node * job.nodes,
                    request,
                    request,
                    "COMPLETED",
                )
            )
        )
    path.write_text("\n".join(lines) + "\n")


def shapes_text(jobs: Sequence[Job]) -> str:
    """``1x8: 12, 2x8: 5, ...``: the jobs' shapes (nodes x GPUs per node) and counts."""
    counts: dict[str, int] = {}
    for job in sorted(jobs, key=lambda j: (j.nodes, j.gpus_per_node)):
        key = f"{job.nodes}x{job.gpus_per_node}"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k}: {v}" for k, v in counts.items())


def expand_hostlist(hostlist: str) -> list[str]:
    """``gpu[01-03,07]`` -> gpu01, gpu02, gpu03, gpu07 (the forms sacct and gpuplan print)."""
    names: list[str] = []
    part, depth = "", 0
    pieces = []
    for ch in hostlist:  # split on commas outside brackets
        if ch == "," and depth == 0:
            pieces.append(part)
            part = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        part += ch
    if part:
        pieces.append(part)
    for piece in pieces:
        if "[" not in piece:
            names.append(piece)
            continue
        prefix, ranges = piece.split("[", 1)
        for r in ranges.rstrip("]").split(","):
            lo, _, hi = r.partition("-")
            width = len(lo)
            for i in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{i:0{width}d}")
    return names

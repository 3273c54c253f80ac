// Which machine ran a benchmark record: one stable identity per machine, and its name.
//
// A record's machine (bench_report.py) has host, cpus, cpu_model, gpu, gpu_name and, when the run
// set CUBBY_BENCH_MACHINE, label. Host names and CPU model strings vary between runs of one
// machine (a cloud VM gets a new host name; older records have no cpu_model, newer ones "AMD
// EPYC"), so they never enter the identity: a machine is its GPU model and its CPU count
// ("H200, 16 CPUs", "no GPU, 2 CPUs"), or the label the run was given. Records are normalised as
// they are read; the history file is never rewritten.

// The GPU model without the vendor and brand words that some drivers add: "NVIDIA H200" and
// "H200" are one model.
export function gpuModel(machine) {
  const name = String(machine?.gpu_name ?? "").replace(/\s+/g, " ").trim()
    .replace(/^NVIDIA\s+/i, "").replace(/^(GeForce|Tesla|Quadro)\s+/i, "");
  if (name) return name;
  return machine?.gpu ? "GPU" : "no GPU";
}

// The name of a record's machine, which is also its identity: records with the same name come
// from the same machine.
export function machineName(record) {
  const m = record?.machine ?? {};
  const label = String(m.label ?? "").trim();
  if (label) return label;
  const cpus = Number(m.cpus);
  return `${gpuModel(m)}${cpus > 0 ? `, ${cpus} CPU${cpus === 1 ? "" : "s"}` : ""}`;
}

// Which machine ran a benchmark record: one stable identity per machine, and its name.
//
// A record's machine (bench_report.py) has host, cpus, cpu_model, gpu, gpu_name and, when the run
// set CUBBY_BENCH_MACHINE, label; newer ones an id (bench_report.py: a hash of /etc/machine-id).
// Host names and CPU model strings vary between runs of one machine (a cloud VM gets a new host
// name; older records have no cpu_model, newer ones "AMD EPYC"), so they never enter the identity.
// A machine is the label the run was given, else its description (GPU model and CPU count: "H200,
// 16 CPUs", "no GPU, 2 CPUs") with its id ("no GPU, 2 CPUs · 3f9a2c1b"): two machines of one
// description are never merged. Records written before ids go by their description alone. Records
// are normalised as they are read; the history file is never rewritten.

// The GPU model without the vendor and brand words that some drivers add: "NVIDIA H200" and
// "H200" are one model.
export function gpuModel(machine) {
  const name = String(machine?.gpu_name ?? "").replace(/\s+/g, " ").trim()
    .replace(/^NVIDIA\s+/i, "").replace(/^(GeForce|Tesla|Quadro)\s+/i, "");
  if (name) return name;
  return machine?.gpu ? "GPU" : "no GPU";
}

// A machine's description: its GPU model and CPU count.
export function machineDescription(machine) {
  const cpus = Number(machine?.cpus);
  return `${gpuModel(machine)}${cpus > 0 ? `, ${cpus} CPU${cpus === 1 ? "" : "s"}` : ""}`;
}

// The name of a record's machine, which is also its identity: records with the same name come
// from the same machine.
export function machineName(record) {
  const m = record?.machine ?? {};
  const label = String(m.label ?? "").trim();
  if (label) return label;
  const id = String(m.id ?? "").trim();
  return `${machineDescription(m)}${id ? ` · ${id.slice(0, 8)}` : ""}`;
}

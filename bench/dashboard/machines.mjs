// Which machine ran a benchmark record, and a name for it that tells machines apart.
//
// A record's machine (bench_report.py) has host, cpus, cpu_model, gpu, gpu_name and, when the run
// set CUBBY_BENCH_MACHINE, label. Host names are often useless ("vm" on every cloud VM), so the
// name is built from what differs: the given label, else the GPU model ("H200", or "no GPU"), the
// CPU count and the host when it says something. Two machines that still get the same name are
// told apart by their CPU model, then by a number.

// Host names that say nothing about the machine.
const GENERIC_HOSTS = /^(vm|localhost|ubuntu|debian|runner|\?|[0-9a-f]{12})?$/i;

// The identity of a record's machine: records with the same key come from the same machine.
export function machineKey(record) {
  const m = record?.machine ?? {};
  return JSON.stringify([m.label ?? "", m.host ?? "", m.cpus ?? "", m.cpu_model ?? "", m.gpu_name ?? "",
                         Boolean(m.gpu)]);
}

function shortGpu(name) {
  return String(name).replace(/^NVIDIA\s+/i, "").replace(/^(GeForce|Tesla|Quadro)\s+/i, "").trim();
}

// The readable name of one machine, without regard to the others.
export function baseLabel(record) {
  const m = record?.machine ?? {};
  if (m.label) return String(m.label);
  const gpu = m.gpu_name ? shortGpu(m.gpu_name) : (m.gpu ? "GPU" : "no GPU");
  const cpus = m.cpus ? `, ${m.cpus} CPU${m.cpus === 1 ? "" : "s"}` : "";
  const host = m.host && !GENERIC_HOSTS.test(String(m.host)) ? ` (${m.host})` : "";
  return `${gpu}${cpus}${host}`;
}

// {key: label} for every machine of `records`: labels are unique.
export function machineLabels(records) {
  const byKey = new Map();
  for (const r of records) if (!byKey.has(machineKey(r))) byKey.set(machineKey(r), r);
  const labels = new Map([...byKey].map(([key, r]) => [key, baseLabel(r)]));
  const clashing = (label) => [...labels.values()].filter((l) => l === label).length > 1;
  for (const [key, r] of byKey) {
    const model = r.machine?.cpu_model;
    if (clashing(labels.get(key)) && model && !r.machine?.label) labels.set(key, `${labels.get(key)} [${model}]`);
  }
  const seen = new Map();
  for (const [key, label] of labels) {
    if (!clashing(label)) continue;
    const n = (seen.get(label) ?? 0) + 1;
    seen.set(label, n);
    if (n > 1) labels.set(key, `${label} #${n}`);
  }
  return Object.fromEntries(labels);
}

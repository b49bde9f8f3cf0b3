// A profiler trace as a timeline: one lane per CPU thread and GPU stream, zoom
// (Ctrl + wheel, or the buttons) and pan (drag), click an event to see its
// arguments, events an answer cites highlighted. The server renders the data
// with json_script (graders/profiling/timeline.py):
// <div data-trace-timeline="id-of-json"> ... <pre data-event-args>
// One timeline microsecond is drawn as one millisecond of vis-timeline's clock.
import { DataSet, Timeline } from "vis-timeline/standalone";
import "vis-timeline/styles/vis-timeline-graph2d.min.css";

function label(us) {
  if (Math.abs(us) >= 1e6) return `${(us / 1e6).toFixed(3)} s`;
  if (Math.abs(us) >= 1e3) return `${(us / 1e3).toFixed(3)} ms`;
  return `${Math.round(us)} µs`;
}

function text(value) {
  const span = document.createElement("span");
  span.textContent = value;
  return span;
}

function show(panel, item) {
  panel.replaceChildren();
  const heading = document.createElement("strong");
  heading.className = "event-name";
  heading.textContent = item.name;
  panel.append(heading, text(` · ${item.kind} · ev:${item.id} · ${label(item.start)} for ${label(item.end - item.start)}`));
  if (item.cited) panel.append(text(" · cited by the answer"));
  const args = document.createElement("pre");
  args.textContent = item.args || "(no args)";
  panel.append(args);
  panel.dataset.shownEvent = String(item.id);
}

function mount(root) {
  const data = JSON.parse(document.getElementById(root.dataset.traceTimeline).textContent);
  const panel = root.parentElement.querySelector("[data-event-args]");
  const byId = new Map(data.items.map((item) => [item.id, item]));
  // Nested events (an operator inside its step) go one row down: one subgroup per depth.
  const groups = new DataSet(data.lanes.map((lane) => ({
    id: lane.id,
    content: lane.label,
    order: lane.order,
    className: lane.gpu ? "lane-gpu" : "lane-cpu",
    subgroupOrder: (a, b) => a.subgroup - b.subgroup,
  })));
  const items = new DataSet(data.items.map((item) => ({
    id: item.id,
    group: item.lane,
    subgroup: item.depth,
    start: item.start,
    end: item.end,
    type: "range",
    content: "",
    title: `${item.name} (${label(item.end - item.start)})`,
    className: `ev-${item.kind}${item.cited ? " ev-cited" : ""}`,
  })));
  const last = data.items.reduce((end, item) => Math.max(end, item.end), 1);
  const timeline = new Timeline(root, items, groups, {
    stack: false,
    stackSubgroups: true,
    selectable: true,
    showCurrentTime: false,
    zoomKey: "ctrlKey",
    zoomMin: 5,
    min: -last * 0.02,
    max: last * 1.02,
    start: 0,
    end: last,
    groupOrder: "order",
    margin: { item: 1, axis: 4 },
    orientation: "top",
    format: {
      minorLabels: (date) => label(date.valueOf()),
      majorLabels: () => "",
    },
  });
  timeline.on("select", ({ items: chosen }) => {
    const item = byId.get(chosen[0]);
    if (item && panel) show(panel, item);
  });
  root.timeline = timeline;
  root.dataset.ready = "true";
  const zoom = (factor) => () => (factor > 1 ? timeline.zoomOut(0.5) : timeline.zoomIn(0.5));
  root.parentElement.querySelector("[data-zoom-in]")?.addEventListener("click", zoom(0.5));
  root.parentElement.querySelector("[data-zoom-out]")?.addEventListener("click", zoom(2));
  root.parentElement.querySelector("[data-fit]")?.addEventListener("click", () => timeline.fit());
  for (const button of root.parentElement.querySelectorAll("[data-focus-event]")) {
    button.addEventListener("click", () => {
      const id = Number(button.dataset.focusEvent);
      timeline.setSelection([id], { focus: true });
      const item = byId.get(id);
      if (item && panel) show(panel, item);
    });
  }
}

document.querySelectorAll("[data-trace-timeline]").forEach(mount);

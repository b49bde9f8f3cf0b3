// Charts from data the server renders with Django's json_script:
// <canvas data-chart="id-of-json"> and <script type="application/json" id="...">
// {"type": "bar", "labels": [...], "series": [{"label": ..., "values": [...]}],
//  "stacked": false, "unit": "ms"}
import {
  BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip,
} from "chart.js";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

const PALETTE = ["#2f5fb3", "#d49b00", "#1f7a45", "#8a93a0", "#b42318", "#5b3fa6"];
const STATUS_COLOURS = { draft: "#8a93a0", in_review: "#d49b00", published: "#1f7a45", retired: "#c3c9d0" };

function config(spec) {
  const datasets = spec.series.map((series, index) => ({
    label: series.label,
    data: series.values,
    backgroundColor: STATUS_COLOURS[series.key] || PALETTE[index % PALETTE.length],
    borderRadius: 3,
    maxBarThickness: 48,
  }));
  return {
    type: spec.type || "bar",
    data: { labels: spec.labels, datasets },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      plugins: { legend: { position: "bottom" } },
      scales: {
        x: { stacked: Boolean(spec.stacked), grid: { display: false } },
        y: {
          stacked: Boolean(spec.stacked),
          beginAtZero: true,
          title: { display: Boolean(spec.unit), text: spec.unit || "" },
          ticks: spec.stacked ? { precision: 0 } : {},
        },
      },
    },
  };
}

function mountCharts(root) {
  root.querySelectorAll("canvas[data-chart]").forEach((canvas) => {
    if (canvas.chart) return;
    const source = document.getElementById(canvas.dataset.chart);
    if (!source) return;
    canvas.chart = new Chart(canvas, config(JSON.parse(source.textContent)));
    canvas.dataset.chartReady = "true";
  });
}

document.addEventListener("DOMContentLoaded", () => mountCharts(document));
document.addEventListener("htmx:load", (event) => mountCharts(event.target));

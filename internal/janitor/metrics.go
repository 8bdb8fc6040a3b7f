package janitor

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var (
	registry = prometheus.NewRegistry()
	actions  = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "codeinterp_janitor_actions_total",
		Help: "What the janitor did, by action.",
	}, []string{"action"})
	sweepErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "codeinterp_janitor_sweep_errors_total",
		Help: "Sweeps that failed, by sweep.",
	}, []string{"sweep"})
	sweeps = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "codeinterp_janitor_sweeps_total",
		Help: "Sweeps run.",
	})
)

func init() { registry.MustRegister(actions, sweepErrors, sweeps) }

func record(r Report) {
	sweeps.Inc()
	actions.WithLabelValues("pause_requested").Add(float64(r.PauseRequested))
	actions.WithLabelValues("reap_requested").Add(float64(r.ReapRequested))
	actions.WithLabelValues("orphan_removed").Add(float64(r.OrphansRemoved))
	actions.WithLabelValues("orphan_snapshotted").Add(float64(r.OrphansSaved))
	actions.WithLabelValues("stuck_requeued").Add(float64(r.StuckRequeued))
	actions.WithLabelValues("stuck_ended").Add(float64(r.StuckEnded))
	actions.WithLabelValues("active_dropped").Add(float64(r.ActiveDropped))
	actions.WithLabelValues("copy_deleted").Add(float64(r.CopiesDeleted))
	actions.WithLabelValues("network_removed").Add(float64(r.NetworksRemoved))
	actions.WithLabelValues("artifact_expired").Add(float64(r.ArtifactsExpired))
	actions.WithLabelValues("entry_expired").Add(float64(r.EntriesExpired))
}

// MetricsHandler serves the janitor's metrics.
func MetricsHandler() http.Handler { return promhttp.HandlerFor(registry, promhttp.HandlerOpts{}) }

package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/codeinterp/codeinterp/internal/service"
)

var (
	registry = prometheus.NewRegistry()
	requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "codeinterp_http_request_duration_seconds",
		Help:    "HTTP requests by route and status, and how long they took (long-polls included).",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 30, 60},
	}, []string{"method", "route", "status"})
)

func init() {
	registry.MustRegister(requests, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// methods are the request methods labelled as themselves; any other token, which a
// client may make up, is "other", so labels stay a fixed set.
var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodDelete: true, http.MethodPatch: true, http.MethodOptions: true,
}

// metricsHandler serves the process metrics and, read from Redis at each scrape (in a
// fixed number of round trips: service.UsageAll), the tenants' usage (the same on
// every API replica).
func (s *Server) metricsHandler() http.Handler {
	usage := prometheus.NewRegistry()
	usage.MustRegister(usageCollector{svc: s.svc})
	usage.MustRegister(s.cfg.Collectors...)
	// This process's budget of bodies (CODEINTERP_INFLIGHT_BYTES): request bodies and
	// input files fetched by URL.
	usage.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "codeinterp_api_inflight_bytes",
			Help: "Bytes of request bodies and fetched input files this API process holds now."},
			func() float64 { return float64(s.bodies.Held()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "codeinterp_api_inflight_limit_bytes",
			Help: "The most bytes of request bodies and fetched input files this API process holds at once (CODEINTERP_INFLIGHT_BYTES)."},
			func() float64 { return float64(s.bodies.Size()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "codeinterp_api_inflight_refused_total",
			Help: "Requests and fetches refused (503) because the budget of bodies was used up."},
			func() float64 { return float64(s.bodies.Refused()) }),
	)
	return promhttp.HandlerFor(prometheus.Gatherers{registry, usage}, promhttp.HandlerOpts{})
}

func (s *Server) metricsMiddleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil {
				c.Error(err) // write the error response now, so its status is counted
				status = c.Response().Status
			}
			method := c.Request().Method
			if !methods[method] {
				method = "other"
			}
			route := c.Path()
			if !s.routes[route] {
				route = "unmatched"
			}
			requests.WithLabelValues(method, route, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
			return nil
		}
	}
}

var (
	usageExecutions = prometheus.NewDesc("codeinterp_tenant_executions_total", "Ended executions by tenant and status.", []string{"tenant", "status"}, nil)
	usageCPU        = prometheus.NewDesc("codeinterp_tenant_cpu_seconds_total", "CPU time of tenants' code.", []string{"tenant"}, nil)
	usageWall       = prometheus.NewDesc("codeinterp_tenant_wall_seconds_total", "Run time of tenants' executions.", []string{"tenant"}, nil)
	usageBytes      = prometheus.NewDesc("codeinterp_tenant_bytes_stored_total", "Bytes of artifacts and inputs tenants stored.", []string{"tenant"}, nil)
	usageLive       = prometheus.NewDesc("codeinterp_tenant_live_sandboxes", "Threads of a tenant with a sandbox now.", []string{"tenant"}, nil)
	usageActive     = prometheus.NewDesc("codeinterp_tenant_active_executions", "Executions of a tenant queued or running now.", []string{"tenant"}, nil)
	usageUploads    = prometheus.NewDesc("codeinterp_tenant_upload_bytes_today", "Bytes counted against a tenant's upload quota today (UTC).", []string{"tenant"}, nil)
)

// usageCollector exports every tenant's usage as counters and gauges labelled by
// tenant: tenants are the configured ones, so the label set stays bounded.
type usageCollector struct{ svc *service.Service }

func (u usageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{usageExecutions, usageCPU, usageWall, usageBytes, usageLive, usageActive, usageUploads} {
		ch <- d
	}
}

func (u usageCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, err := u.svc.UsageAll(ctx)
	if err != nil {
		return // a scrape without usage; Redis health is on /readyz
	}
	for tenant, x := range all {
		for st, n := range x.Executions {
			ch <- prometheus.MustNewConstMetric(usageExecutions, prometheus.CounterValue, float64(n), tenant, string(st))
		}
		ch <- prometheus.MustNewConstMetric(usageCPU, prometheus.CounterValue, x.CPUSeconds, tenant)
		ch <- prometheus.MustNewConstMetric(usageWall, prometheus.CounterValue, x.WallSeconds, tenant)
		ch <- prometheus.MustNewConstMetric(usageBytes, prometheus.CounterValue, float64(x.BytesStored), tenant)
		ch <- prometheus.MustNewConstMetric(usageLive, prometheus.GaugeValue, float64(x.LiveSandbox), tenant)
		ch <- prometheus.MustNewConstMetric(usageActive, prometheus.GaugeValue, float64(x.Active), tenant)
		ch <- prometheus.MustNewConstMetric(usageUploads, prometheus.GaugeValue, float64(x.UploadsToday), tenant)
	}
}

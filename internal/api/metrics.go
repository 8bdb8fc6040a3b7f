package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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

func metricsHandler() http.Handler { return promhttp.HandlerFor(registry, promhttp.HandlerOpts{}) }

func metricsMiddleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil {
				c.Error(err) // write the error response now, so its status is counted
				status = c.Response().Status
			}
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			requests.WithLabelValues(c.Request().Method, route, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
			return nil
		}
	}
}

package worker

// Budgets bound what one execution may put into worker memory, Redis and storage, so
// no tenant's code can exhaust what all tenants share. Zero fields take defaults.
type Budgets struct {
	MaxResults     int   // rich results kept per execution; default 100
	MaxResultBytes int   // bytes of rich results kept inline; default 4 MiB
	StreamBytes    int64 // bytes of stdout/stderr/result events streamed per execution; default twice the inline output cap
	CollectBytes   int64 // bytes of output files collected per run; default the workspace size
	MaxRecordBytes int   // a stored execution record; default 16 MiB
}

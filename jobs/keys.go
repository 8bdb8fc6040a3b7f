package jobs

import "cmp"

// Storage keys. Every key starts with the tenant, so one tenant's keys can never name
// another's objects: <tenant>/<thread or "oneoff">/<execution>/...

func executionPrefix(ex *Execution) string {
	return ex.Tenant + "/" + cmp.Or(ex.ThreadID, "oneoff") + "/" + ex.ID + "/"
}

// InputKey is where the API stores an input file of ex before the run.
func InputKey(ex *Execution, name string) string { return executionPrefix(ex) + "inputs/" + name }

// artifactKey is where a produced file (outputs/..., or a full log) is stored.
func artifactKey(ex *Execution, name string) string { return executionPrefix(ex) + name }

// UploadKey is where POST /v1/files stores an upload; clients see it as "uploads/<id>/<name>".
func UploadKey(tenant, object string) string { return tenant + "/" + object }

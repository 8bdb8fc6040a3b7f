package worker

import (
	"mime"
	"path"
	"strings"
)

// extraTypes covers what agents produce and Go's small built-in table lacks.
var extraTypes = map[string]string{
	".csv":     "text/csv",
	".tsv":     "text/tab-separated-values",
	".txt":     "text/plain; charset=utf-8",
	".log":     "text/plain; charset=utf-8",
	".md":      "text/markdown; charset=utf-8",
	".xlsx":    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".docx":    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".pptx":    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".xls":     "application/vnd.ms-excel",
	".zip":     "application/zip",
	".gz":      "application/gzip",
	".npy":     "application/octet-stream",
	".parquet": "application/vnd.apache.parquet",
}

// contentType guesses a file's media type from its name.
func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := extraTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

package api

import (
	"mime"
	"net/http"
)

// passiveTypes are the media types a browser shows without running anything in
// them. Files are whatever users' code wrote: any other type (HTML, SVG, XML, XSLT,
// JavaScript, PDF, or one we cannot parse) is served as an attachment.
var passiveTypes = map[string]bool{
	"text/plain": true, "text/csv": true, "text/tab-separated-values": true, "text/markdown": true,
	"application/json": true, "application/octet-stream": true,
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
}

// setFileHeaders sets the headers of a workspace file served by the API itself, so a
// browser never runs it on the API's origin (where it could use the API as whoever
// opened it): no sniffing of another type, a CSP sandbox (no scripts, an opaque
// origin) and, for any type not known to be passive, a download instead of a page.
func setFileHeaders(h http.Header, contentType, filename string) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && passiveTypes[mt] {
		return
	}
	disposition := mime.FormatMediaType("attachment", map[string]string{"filename": filename})
	if disposition == "" {
		disposition = "attachment"
	}
	h.Set("Content-Disposition", disposition)
}

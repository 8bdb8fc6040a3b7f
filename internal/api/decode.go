package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/codeinterp/codeinterp/internal/service"
)

// decodeJSON reads a JSON body into v, refusing unknown fields, trailing data and
// bodies over the limit, with errors that name the field at fault.
func decodeJSON(req *http.Request, v any, body []byte) error {
	if ct := req.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
			return &Error{Status: http.StatusUnsupportedMediaType, Code: "invalid_argument", Message: "Content-Type must be application/json"}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("", "unexpected data after the JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		tooBig  *http.MaxBytesError
		busy    *service.Error
		unknown = "json: unknown field "
	)
	switch {
	case errors.As(err, &busy): // the budget of bodies ran out while reading
		return busy
	case errors.As(err, &tooBig):
		return tooLarge("", "the request body is over %d bytes; upload big files with POST /v1/files and reference them by object", tooBig.Limit)
	case errors.As(err, &syntax):
		return invalid("", "malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		return invalid(typ.Field, "must be %s, not %s", typeName(typ.Type), typ.Value)
	case strings.HasPrefix(err.Error(), unknown):
		field := strings.Trim(strings.TrimPrefix(err.Error(), unknown), `"`)
		return invalid(field, "unknown field")
	case errors.Is(err, io.EOF):
		return invalid("", "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("", "the JSON body ends too early")
	}
	return invalid("", "bad JSON: %v", err)
}

// typeName names a Go type as a client knows it: a named string is a string.
func typeName(t reflect.Type) string {
	if t.PkgPath() != "" && t.Kind() <= reflect.String {
		return t.Kind().String()
	}
	return t.String()
}

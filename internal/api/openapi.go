package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// OpenAPI is the OpenAPI 3 document of this API, served at /openapi.json. Tests
// validate real responses against it, so it cannot drift from the code.
//
//go:embed openapi.json
var OpenAPI []byte

func openapi(c echo.Context) error { return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, OpenAPI) }

package sandbox

// Language is a language a sandbox runs code in.
type Language string

// The languages every runtime supports. Javascript runs with Node.js, a fresh process
// per run (no state is kept between a thread's runs, unlike Python's); an image
// without Node (the slim one) answers it with a failed result.
const (
	Python     Language = "python"
	Bash       Language = "bash"
	Javascript Language = "javascript"
)

// DefaultLanguage is the language of a request that names none.
const DefaultLanguage = Python

// Languages lists the supported languages, in the order the API documents them. The
// API validates requests against it, and a test keeps openapi.json in step.
var Languages = []Language{Python, Bash, Javascript}

// Supported reports whether l is one of [Languages].
func (l Language) Supported() bool {
	for _, s := range Languages {
		if l == s {
			return true
		}
	}
	return false
}

package sandbox

// Language is a language a sandbox runs code in.
type Language string

// The languages every runtime supports.
const (
	Python Language = "python"
	Bash   Language = "bash"
)

// DefaultLanguage is the language of a request that names none.
const DefaultLanguage = Python

// Languages lists the supported languages, in the order the API documents them. The
// API validates requests against it, and a test keeps openapi.json in step.
var Languages = []Language{Python, Bash}

// Supported reports whether l is one of [Languages].
func (l Language) Supported() bool {
	for _, s := range Languages {
		if l == s {
			return true
		}
	}
	return false
}

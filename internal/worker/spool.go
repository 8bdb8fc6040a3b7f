package worker

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// spool keeps a whole output stream so it can be stored when it outgrows the inline
// copy: in memory while small, then in a temporary file, up to max bytes.
type spool struct {
	max, inMemory int64
	mem           bytes.Buffer
	file          *os.File
	size          int64
	dropped       int64
	err           error
}

func newSpool(inMemory, max int64) *spool { return &spool{inMemory: inMemory, max: max} }

func (s *spool) write(text string) {
	if s.err != nil {
		return
	}
	if room := s.max - s.size; int64(len(text)) > room {
		s.dropped += int64(len(text)) - max(room, 0)
		text = text[:max(room, 0)]
	}
	if s.file == nil && s.size+int64(len(text)) > s.inMemory {
		if s.file, s.err = os.CreateTemp("", "codeinterp-stream-*"); s.err != nil {
			return
		}
		os.Remove(s.file.Name()) // unlinked: the data goes away with the handle
		_, s.err = s.file.Write(s.mem.Bytes())
		s.mem = bytes.Buffer{}
	}
	if s.file != nil {
		_, s.err = io.WriteString(s.file, text)
	} else {
		s.mem.WriteString(text)
	}
	s.size += int64(len(text))
}

// open returns the whole stream, with a note if it was cut at max.
func (s *spool) open() (io.ReadCloser, int64, error) {
	if s.err != nil {
		return nil, 0, fmt.Errorf("spool output: %w", s.err)
	}
	note := ""
	if s.dropped > 0 {
		note = fmt.Sprintf("\n[codeinterp: %d more bytes were discarded past the %d-byte log limit]\n", s.dropped, s.max)
	}
	body := io.Reader(bytes.NewReader(s.mem.Bytes()))
	if s.file != nil {
		body = io.NewSectionReader(s.file, 0, s.size)
	}
	return io.NopCloser(io.MultiReader(body, strings.NewReader(note))), s.size + int64(len(note)), nil
}

func (s *spool) close() {
	if s.file != nil {
		s.file.Close()
	}
}

package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"
)

// Object describes a stored object.
type Object struct {
	Key         string
	Size        int64
	ContentType string
	SHA256      string // hex; set by Put only
	Modified    time.Time
}

// unknownSizePart is the part size of a Put of unknown length. minio-go buffers one
// part in memory per upload and, left to itself, sizes parts for a 5 TiB object
// (over 500 MiB each): a handful of chunked uploads would exhaust the process.
// 16 MiB parts bound an upload of unknown length to 160 GiB (10,000 parts).
const unknownSizePart = 16 << 20

// Put stores size bytes from r under key and returns their SHA-256. A size of -1
// streams an unknown length: the first 16 MiB are buffered as they arrive, so a body
// that ends within them costs its own size and is sent with its length; a longer one
// continues in parts of 16 MiB buffered one at a time. The whole transfer is bounded
// by the store's TransferTimeout.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (Object, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TransferTimeout)
	defer cancel()
	opts := minio.PutObjectOptions{ContentType: contentType}
	h := sha256.New()
	r = io.TeeReader(r, h)
	if size < 0 {
		// minio-go would allocate a whole part at once, for a body of one byte too.
		head, n, ended, err := readHead(r, unknownSizePart)
		if err != nil {
			return Object{}, fmt.Errorf("put %s: %w", key, err)
		}
		if ended {
			r, size = head, n
		} else {
			r, opts.PartSize = io.MultiReader(head, r), unknownSizePart
		}
	}
	info, err := s.cli.PutObject(ctx, s.cfg.Bucket, key, r, size, opts)
	if err != nil {
		return Object{}, fmt.Errorf("put %s: %w", key, err)
	}
	return Object{Key: key, Size: info.Size, ContentType: contentType, SHA256: hex.EncodeToString(h.Sum(nil)), Modified: time.Now()}, nil
}

// headBlock is the unit readHead buffers in: a small body costs one block.
const headBlock = 64 << 10

// readHead reads up to max bytes of r in blocks allocated as they fill. ended says r
// ended within them; the bytes read are head's, n of them.
func readHead(r io.Reader, max int64) (head io.Reader, n int64, ended bool, err error) {
	var blocks []io.Reader
	for n < max {
		b := make([]byte, min(headBlock, max-n))
		k, err := io.ReadFull(r, b)
		n += int64(k)
		blocks = append(blocks, bytes.NewReader(b[:k]))
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return io.MultiReader(blocks...), n, true, nil
		case err != nil:
			return nil, n, false, err
		}
	}
	return io.MultiReader(blocks...), n, false, nil
}

// Stat describes the object under key, or returns ErrNotFound.
func (s *Store) Stat(ctx context.Context, key string) (Object, error) {
	info, err := s.cli.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, wrapNotFound(err, key)
	}
	return objectOf(info), nil
}

// Open streams the object under key, or returns ErrNotFound. Reading must end within
// the store's TransferTimeout; Close releases the transfer.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TransferTimeout)
	obj, err := s.cli.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		cancel()
		return nil, Object{}, wrapNotFound(err, key)
	}
	info, err := obj.Stat() // GetObject is lazy: this is the request that can fail
	if err != nil {
		obj.Close()
		cancel()
		return nil, Object{}, wrapNotFound(err, key)
	}
	return transfer{ReadCloser: obj, cancel: cancel}, objectOf(info), nil
}

// OpenTail streams the last n bytes of the object under key (all of it when it is
// shorter), with one ranged request: a log's end costs its end, not the whole log.
func (s *Store) OpenTail(ctx context.Context, key string, n int64) (io.ReadCloser, Object, error) {
	if n <= 0 {
		return nil, Object{}, fmt.Errorf("open the tail of %s: want a positive length, not %d", key, n)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TransferTimeout)
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(0, -n); err != nil { // bytes=-n
		cancel()
		return nil, Object{}, err
	}
	obj, err := s.cli.GetObject(ctx, s.cfg.Bucket, key, opts)
	if err != nil {
		cancel()
		return nil, Object{}, wrapNotFound(err, key)
	}
	info, err := obj.Stat()
	if err != nil {
		obj.Close()
		cancel()
		return nil, Object{}, wrapNotFound(err, key)
	}
	return transfer{ReadCloser: obj, cancel: cancel}, objectOf(info), nil
}

// transfer is an object being read; closing it ends its deadline's timer.
type transfer struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (t transfer) Close() error {
	defer t.cancel()
	return t.ReadCloser.Close()
}

// PresignGet returns a URL that downloads key without credentials until it expires.
// filename, if set, is offered to browsers as the download's name.
//
// The object is always served as an attachment (S3's response-content-disposition,
// part of the signature, so a holder of the URL cannot drop it): objects are what
// users' code wrote, and one tenant's HTML or SVG must never render, let alone run
// scripts, on the storage origin that serves every tenant's downloads.
func (s *Store) PresignGet(ctx context.Context, key, filename string) (string, time.Time, error) {
	params := url.Values{}
	params.Set("response-content-disposition", attachment(filename))
	expires := time.Now().Add(s.cfg.URLTTL).UTC().Truncate(time.Second)
	u, err := s.signer.PresignedGetObject(ctx, s.cfg.Bucket, key, s.cfg.URLTTL, params)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("presign %s: %w", key, err)
	}
	return u.String(), expires, nil
}

// attachment is a Content-Disposition that downloads, naming the file if it can (RFC
// 6266, with RFC 2231 encoding for names that are not plain ASCII).
func attachment(filename string) string {
	if filename != "" {
		if v := mime.FormatMediaType("attachment", map[string]string{"filename": filename}); v != "" {
			return v
		}
	}
	return "attachment"
}

func objectOf(info minio.ObjectInfo) Object {
	return Object{
		Key: info.Key, Size: info.Size, ContentType: info.ContentType,
		Modified: info.LastModified,
	}
}

func wrapNotFound(err error, key string) error {
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("s3 object %s: %w", key, err)
}

#ifndef IMAGO_CCURL_H
#define IMAGO_CCURL_H

// libcurl for the curl data loader. Its option setters and info getters are
// variadic C functions, which Swift cannot call, so each type of argument gets a
// typed wrapper here; everything else is called from Swift directly.

#include <curl/curl.h>

static inline CURLcode imago_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode imago_easy_setopt_offset(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}

/// Strings, lists, buffers and callback context pointers.
static inline CURLcode imago_easy_setopt_pointer(CURL *easy, CURLoption option, const void *value) {
    return curl_easy_setopt(easy, option, value);
}

/// CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION.
static inline CURLcode imago_easy_setopt_write_callback(
    CURL *easy, CURLoption option, size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(easy, option, callback);
}

/// CURLOPT_OPENSOCKETFUNCTION: the loader opens its sockets itself, to keep
/// descriptors free for the rest of the process.
static inline CURLcode imago_easy_setopt_opensocket_callback(CURL *easy, curl_opensocket_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, callback);
}

/// CURLOPT_CLOSESOCKETFUNCTION: the loader counts the sockets it holds.
static inline CURLcode imago_easy_setopt_closesocket_callback(CURL *easy, curl_closesocket_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, callback);
}

static inline CURLcode imago_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

static inline CURLcode imago_easy_getinfo_offset(CURL *easy, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(easy, info, value);
}

static inline CURLcode imago_easy_getinfo_pointer(CURL *easy, CURLINFO info, void **value) {
    return curl_easy_getinfo(easy, info, value);
}

static inline CURLMcode imago_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

#endif

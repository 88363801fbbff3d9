/* The package path policy and non-blocking opens (src/base/pkg_file), and the config
 * parser applying the policy to every key that names a file. */
#include "testing.h"

#include "base/mapped_file.h"
#include "base/pkg_file.h"
#include "genai/config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(pkg_path_policy) {
    static const char *const ok[] = {"model.onnx", "sub/model.onnx", "./model.onnx",
                                     "a..b/c.onnx", "..x", "x..", "sub/.hidden", NULL};
    for (int i = 0; ok[i]; i++)
        if (pkg_path_problem(ok[i])) {
            test_fail(__FILE__, __LINE__, "'%s' refused: %s", ok[i], pkg_path_problem(ok[i]));
            return;
        }
    static const struct {
        const char *path, *why;
    } bad[] = {
        {"", "empty"},
        {"/etc/passwd", "absolute"},
        {"\\\\server\\share", "absolute"},
        {"..", "'..'"},
        {"../past.onnx", "'..'"},
        {"sub/../../past.onnx", "'..'"},
        {"sub/..", "'..'"},
        {"sub\\..\\..\\x", "'..'"}, /* Windows separators count too */
        {"a/../b", "'..'"},         /* even when it would stay inside: no '..' at all */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = pkg_path_problem(bad[i].path);
        if (!why || !strstr(why, bad[i].why)) {
            test_fail(__FILE__, __LINE__, "'%s': got '%s', expected a reason with '%s'",
                      bad[i].path, why ? why : "(accepted)", bad[i].why);
            return;
        }
    }
    CHECK_ERR(pkg_path_check("p/genai_config.json", "model.decoder.filename", "../x.onnx"),
              OG_ERR_INVALID_MODEL,
              "p/genai_config.json: model.decoder.filename is '../x.onnx': the path goes up");
    char *joined = NULL;
    CHECK_OK(pkg_path_join("dir", "sub/m.onnx", "cfg", "key", &joined));
    CHECK(strcmp(joined, "dir/sub/m.onnx") == 0);
    free(joined);
    CHECK_OK(pkg_path_join("dir/", "m.onnx", "cfg", "key", &joined));
    CHECK(strcmp(joined, "dir/m.onnx") == 0);
    free(joined);
    CHECK_ERR(pkg_path_join("dir", "/abs", "cfg", "key", &joined), OG_ERR_INVALID_MODEL,
              "cfg: key is '/abs'");
    CHECK(joined == NULL);
}

TEST(pkg_open_refuses_what_is_not_a_regular_file) {
    char dir[1024], fifo[1100], file[1100], link[1100], dangling[1100];
    snprintf(dir, sizeof dir, "%s/pkg_open", test_tmp_dir());
    mkdir(dir, 0777);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(file, sizeof file, "%s/file.json", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    snprintf(dangling, sizeof dangling, "%s/dangling.json", dir);
    unlink(fifo);
    unlink(link);
    unlink(dangling);
    CHECK(mkfifo(fifo, 0666) == 0);
    FILE *f = fopen(file, "wb");
    CHECK(f != NULL);
    fputs("{\"a\": 1}", f);
    fclose(f);
    CHECK(symlink("file.json", link) == 0);
    CHECK(symlink("nowhere.json", dangling) == 0);

    /* A FIFO with no writer: a blocking open would never return. */
    char *data = NULL;
    size_t len = 0;
    CHECK_ERR(pkg_read_file(fifo, 100, &data, &len), OG_ERR_IO, "fifo: not a regular file (a FIFO)");
    mapped_file mf;
    CHECK_ERR(mapped_file_open(fifo, &mf), OG_ERR_IO, "not a regular file (a FIFO)");
    CHECK_ERR(mapped_file_open(dir, &mf), OG_ERR_IO, "not a regular file (a folder)");
    CHECK_ERR(pkg_read_file("/dev/zero", 100, &data, &len), OG_ERR_IO, "a character device");
    CHECK_ERR(pkg_read_file(dangling, 100, &data, &len), OG_ERR_NOT_FOUND, "cannot open");
    CHECK_ERR(pkg_read_file(file, 4, &data, &len), OG_ERR_INVALID_MODEL,
              "8 bytes, more than the 4 this file may have");
    /* links are followed (the Hugging Face cache is made of them) */
    CHECK_OK(pkg_read_file(link, 100, &data, &len));
    CHECK(len == 8 && strcmp(data, "{\"a\": 1}") == 0);
    free(data);
    CHECK_OK(mapped_file_open(link, &mf));
    CHECK(mf.size == 8);
    mapped_file_close(&mf);
}

/* A minimal valid config with one more member spliced into "model" (and the decoder). */
static og_status *parse_with(const char *model_extra, const char *decoder_extra,
                             gen_config **cfg) {
    char json[4096];
    snprintf(json, sizeof json,
             "{\"model\": {\"type\": \"llama\", \"context_length\": 64, %s"
             "\"decoder\": {\"filename\": \"model.onnx\"%s}}}",
             model_extra, decoder_extra);
    return gen_config_parse(json, strlen(json), "pkg/genai_config.json", cfg);
}

TEST(genai_config_refuses_paths_outside_the_package) {
    gen_config *cfg = NULL;
    CHECK_OK(parse_with("", "", &cfg));
    gen_config_free(cfg);
    CHECK_OK(parse_with("\"tokenizer_dir\": \"tok\",", ", \"filename\": \"sub/model.onnx\"", &cfg));
    gen_config_free(cfg);
    /* provider options name places on the user's machine for onnxruntime's execution
     * providers, not files of the package: left alone */
    CHECK_OK(parse_with("", ", \"session_options\": {\"provider_options\": [{\"openvino\": "
                        "{\"cache_dir\": \"/var/cache/ov\"}}], \"ep.context_file_path\": \"/x\"}",
                        &cfg));
    gen_config_free(cfg);
    static const struct {
        const char *model_extra, *decoder_extra, *needle;
    } cases[] = {
        {"", ", \"filename\": \"../../other/past.onnx\"",
         "pkg/genai_config.json: model.decoder.filename is '../../other/past.onnx'"},
        {"", ", \"filename\": \"/etc/passwd\"", "model.decoder.filename is '/etc/passwd': the path is absolute"},
        {"\"embedding\": {\"filename\": \"../e.onnx\"},", "", "model.embedding.filename is '../e.onnx'"},
        {"\"vision\": {\"filename\": \"v.onnx\", \"config_filename\": \"/etc/hosts\"},", "",
         "model.vision.config_filename is '/etc/hosts'"},
        {"\"speech\": {\"filename\": \"s.onnx\", \"adapter_filename\": \"../a\"},", "",
         "model.speech.adapter_filename is '../a'"},
        {"\"tokenizer_dir\": \"..\",", "", "model.tokenizer_dir is '..'"},
        {"", ", \"pipeline\": [{\"stage\": {\"filename\": \"../s.onnx\"}}]",
         "model.decoder.pipeline[0].stage.filename is '../s.onnx'"},
        /* blocks this runtime keeps raw are checked too: onnxruntime-genai opens them */
        {"\"draft\": {\"decoder\": {\"filename\": \"../../d.onnx\"}},", "",
         "model.draft.decoder.filename is '../../d.onnx'"},
        {"\"vad\": {\"model_file\": \"/tmp/x\"},", "", "model.vad.model_file is '/tmp/x'"},
        {"\"mtp\": {\"filenames\": [\"ok.onnx\", \"../no.onnx\"]},", "",
         "model.mtp.filenames[1] is '../no.onnx'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        og_status *st = parse_with(cases[i].model_extra, cases[i].decoder_extra, &cfg);
        if (!st || og_status_code(st) != OG_ERR_INVALID_MODEL ||
            !strstr(og_status_message(st), cases[i].needle)) {
            test_fail(__FILE__, __LINE__, "case %zu: got '%s', expected '%s'", i,
                      st ? og_status_message(st) : "(accepted)", cases[i].needle);
            og_status_free(st);
            if (!st) gen_config_free(cfg);
            return;
        }
        og_status_free(st);
    }
}

// live555-client: an RTSP client on live555's own RTSPClient and MediaSession, the library VLC's live555
// access module and openRTSP are built on, used as VLC's module uses it (Debian 12's VLC is built without
// live555, and Debian has no openRTSP). For the rtsp suite.
//
//   live555-client URL SECONDS OUT [--tcp]
//
// OPTIONS, DESCRIBE, SETUP (RTP over UDP, or over the RTSP connection with --tcp, as VLC's --rtsp-tcp),
// PLAY; writes the NAL units it receives to OUT as Annex B (H264VideoFileSink or H265VideoFileSink, as
// openRTSP does, but without the SDP's parameter sets: what decodes came in-band). Keep-alives as VLC's
// module sends them: GET_PARAMETER every (session timeout - 2) s when OPTIONS' Public lists it, beside
// live555's own RTCP receiver reports. After SECONDS, TEARDOWN. Prints one line:
//   live555: <codec> over <UDP|TCP> for N s; keep-alives: <statuses>; BYE: yes|no; connection: kept|lost
// and exits 0 when every request was answered 200, no BYE came and the RTSP connection was never lost.
#include "BasicUsageEnvironment.hh"
#include "GroupsockHelper.hh"
#include "liveMedia.hh"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
UsageEnvironment* env;
RTSPClient* client;
MediaSession* session;
MediaSubsession* video;
const char* outPath;
double seconds;
bool overTCP = false, keepAliveWithGetParameter = false, failed = false, bye = false;
int connection = -1;
bool connectionLost = false;
std::string codec = "?", keepAlives;
TaskToken keepAliveTask;
char done = 0;

void fail(const char* step, int code, char* text) {
    fprintf(stderr, "live555-client: %s failed: %d %s\n", step, code, text ? text : env->getResultMsg());
    delete[] text;
    failed = true;
    done = 1;
}

void checkConnection() {
    if (client->socketNum() != connection) connectionLost = true;
}

void afterTeardown(RTSPClient*, int code, char* text) {
    delete[] text;
    if (code != 0) failed = true;
    done = 1;
}

void end(void*) {
    env->taskScheduler().unscheduleDelayedTask(keepAliveTask);
    checkConnection();
    client->sendTeardownCommand(*session, afterTeardown);
}

void afterGetParameter(RTSPClient*, int code, char* text) {
    delete[] text;
    keepAlives += (keepAlives.empty() ? "" : " ") + std::to_string(code == 0 ? 200 : code);
    if (code != 0) failed = true;
}

void keepAlive(void*) {
    checkConnection();
    client->sendGetParameterCommand(*session, afterGetParameter, nullptr);
    unsigned timeout = client->sessionTimeoutParameter() ? client->sessionTimeoutParameter() : 60;
    keepAliveTask = env->taskScheduler().scheduleDelayedTask((timeout - 2) * 1000000LL, keepAlive, nullptr);
}

void onBye(void*) { bye = true; }
void afterPlaying(void*) {}

void afterPlay(RTSPClient*, int code, char* text) {
    if (code != 0) return fail("PLAY", code, text);
    delete[] text;
    connection = client->socketNum();
    if (keepAliveWithGetParameter) {
        unsigned timeout = client->sessionTimeoutParameter() ? client->sessionTimeoutParameter() : 60;
        keepAliveTask = env->taskScheduler().scheduleDelayedTask((timeout - 2) * 1000000LL, keepAlive, nullptr);
    }
    env->taskScheduler().scheduleDelayedTask(static_cast<int64_t>(seconds * 1e6), end, nullptr);
}

void afterSetup(RTSPClient*, int code, char* text) {
    if (code != 0) return fail("SETUP", code, text);
    delete[] text;
    FileSink* sink = codec == "H264" ? static_cast<FileSink*>(H264VideoFileSink::createNew(*env, outPath, nullptr, 2000000))
                                     : static_cast<FileSink*>(H265VideoFileSink::createNew(*env, outPath, nullptr, nullptr, nullptr, 2000000));
    video->sink = sink;
    sink->startPlaying(*video->readSource(), afterPlaying, nullptr);
    if (video->rtcpInstance()) video->rtcpInstance()->setByeHandler(onBye, nullptr);
    client->sendPlayCommand(*session, afterPlay);
}

void afterDescribe(RTSPClient*, int code, char* sdp) {
    if (code != 0) return fail("DESCRIBE", code, sdp);
    session = MediaSession::createNew(*env, sdp);
    delete[] sdp;
    if (!session) return fail("SDP", 0, nullptr);
    MediaSubsessionIterator it(*session);
    while (MediaSubsession* s = it.next()) {
        if (strcmp(s->mediumName(), "video") == 0) video = s;
    }
    if (!video || !video->initiate()) return fail("initiate", 0, nullptr);
    codec = video->codecName();
    if (codec != "H264" && codec != "H265") return fail("codec", 0, strDup(codec.c_str()));
    if (!overTCP && video->rtpSource()) increaseReceiveBufferTo(*env, video->rtpSource()->RTPgs()->socketNum(), 2000000);
    client->sendSetupCommand(*video, afterSetup, False, overTCP ? True : False);
}

void afterOptions(RTSPClient*, int code, char* text) {
    if (code != 0) return fail("OPTIONS", code, text);
    keepAliveWithGetParameter = text && strstr(text, "GET_PARAMETER");
    delete[] text;
    client->sendDescribeCommand(afterDescribe);
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--tcp") != 0)) {
        fprintf(stderr, "usage: live555-client URL SECONDS OUT [--tcp]\n");
        return 2;
    }
    seconds = atof(argv[2]);
    outPath = argv[3];
    overTCP = argc == 5;
    TaskScheduler* scheduler = BasicTaskScheduler::createNew();
    env = BasicUsageEnvironment::createNew(*scheduler);
    client = RTSPClient::createNew(*env, argv[1], 0, "camrec rtsp suite (live555)");
    client->sendOptionsCommand(afterOptions);
    env->taskScheduler().doEventLoop(&done);
    printf("live555: %s over %s for %g s; keep-alives: %s; BYE: %s; connection: %s\n", codec.c_str(), overTCP ? "TCP" : "UDP",
           seconds, keepAlives.empty() ? "none" : keepAlives.c_str(), bye ? "yes" : "no", connectionLost ? "lost" : "kept");
    if (video && video->sink) Medium::close(video->sink);
    return failed || bye || connectionLost ? 1 : 0;
}

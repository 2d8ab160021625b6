/* Licensed under the Apache License, Version 2.0. */

/*
 * The TCP counter reader on texts (real files' layouts, reordered,
 * broken) and on this machine's /proc; the accept-queue limit and what
 * the kernel counts against a real listener.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* unshare */
#endif

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "qc_backlog.h"
#include "qc_netstat.h"
#include "qc_test.h"
#include "qc_test_net.h"

/*
 * Linux 6.18's files with hand-set values: the counters read have values
 * of their own, every other field 1000 + its position, so that a field
 * taken by position instead of by name shows.
 */
static const char netstat_text[] =
    "TcpExt: SyncookiesSent SyncookiesRecv SyncookiesFailed EmbryonicRsts "
    "PruneCalled RcvPruned OfoPruned OutOfWindowIcmps LockDroppedIcmps "
    "ArpFilter TW TWRecycled TWKilled PAWSActive PAWSEstab BeyondWindow "
    "TSEcrRejected PAWSOldAck PAWSTimewait DelayedACKs DelayedACKLocked "
    "DelayedACKLost ListenOverflows ListenDrops TCPHPHits TCPPureAcks "
    "TCPHPAcks TCPRenoRecovery TCPSackRecovery TCPSACKReneging "
    "TCPSACKReorder TCPRenoReorder TCPTSReorder TCPFullUndo TCPPartialUndo "
    "TCPDSACKUndo TCPLossUndo TCPLostRetransmit TCPRenoFailures "
    "TCPSackFailures TCPLossFailures TCPFastRetrans TCPSlowStartRetrans "
    "TCPTimeouts TCPLossProbes TCPLossProbeRecovery TCPRenoRecoveryFail "
    "TCPSackRecoveryFail TCPRcvCollapsed TCPBacklogCoalesce TCPDSACKOldSent "
    "TCPDSACKOfoSent TCPDSACKRecv TCPDSACKOfoRecv TCPAbortOnData "
    "TCPAbortOnClose TCPAbortOnMemory TCPAbortOnTimeout TCPAbortOnLinger "
    "TCPAbortFailed TCPMemoryPressures TCPMemoryPressuresChrono "
    "TCPSACKDiscard TCPDSACKIgnoredOld TCPDSACKIgnoredNoUndo TCPSpuriousRTOs "
    "TCPMD5NotFound TCPMD5Unexpected TCPMD5Failure TCPSackShifted "
    "TCPSackMerged TCPSackShiftFallback TCPBacklogDrop PFMemallocDrop "
    "TCPMinTTLDrop TCPDeferAcceptDrop IPReversePathFilter "
    "TCPTimeWaitOverflow TCPReqQFullDoCookies TCPReqQFullDrop TCPRetransFail "
    "TCPRcvCoalesce TCPOFOQueue TCPOFODrop TCPOFOMerge TCPChallengeACK "
    "TCPSYNChallenge TCPFastOpenActive TCPFastOpenActiveFail "
    "TCPFastOpenPassive TCPFastOpenPassiveFail TCPFastOpenListenOverflow "
    "TCPFastOpenCookieReqd TCPFastOpenBlackhole TCPSpuriousRtxHostQueues "
    "BusyPollRxPackets TCPAutoCorking TCPFromZeroWindowAdv "
    "TCPToZeroWindowAdv TCPWantZeroWindowAdv TCPSynRetrans TCPOrigDataSent "
    "TCPHystartTrainDetect TCPHystartTrainCwnd TCPHystartDelayDetect "
    "TCPHystartDelayCwnd TCPACKSkippedSynRecv TCPACKSkippedPAWS "
    "TCPACKSkippedSeq TCPACKSkippedFinWait2 TCPACKSkippedTimeWait "
    "TCPACKSkippedChallenge TCPWinProbe TCPKeepAlive TCPMTUPFail "
    "TCPMTUPSuccess TCPDelivered TCPDeliveredCE TCPAckCompressed "
    "TCPZeroWindowDrop TCPRcvQDrop TCPWqueueTooBig TCPFastOpenPassiveAltKey "
    "TcpTimeoutRehash TcpDuplicateDataRehash TCPDSACKRecvSegs "
    "TCPDSACKIgnoredDubious TCPMigrateReqSuccess TCPMigrateReqFailure "
    "TCPPLBRehash TCPAORequired TCPAOBad TCPAOKeyNotFound TCPAOGood "
    "TCPAODroppedIcmps\n"
    "TcpExt: 1000 1001 1002 1003 1004 1005 1006 1007 1008 1009 1010 1011 "
    "1012 1013 1014 1015 1016 1017 1018 1019 1020 1021 101 103 1024 1025 "
    "1026 1027 1028 1029 1030 1031 1032 1033 1034 1035 1036 1037 1038 1039 "
    "1040 1041 1042 1043 1044 1045 1046 1047 1048 1049 1050 1051 1052 1053 "
    "1054 1055 1056 1057 1058 1059 1060 1061 1062 1063 1064 1065 1066 1067 "
    "1068 1069 1070 1071 1072 1073 1074 1075 1076 1077 1078 2 1080 1081 1082 "
    "1083 1084 1085 1086 1087 1088 1089 1090 1091 1092 1093 1094 1095 1096 "
    "1097 1098 1099 1100 1101 1102 1103 1104 1105 1106 1107 1108 1109 1110 "
    "1111 1112 1113 1114 1115 1116 1117 1118 1119 1120 1121 1122 1123 1124 "
    "1125 1126 1127 1128 1129 1130 1131 1132 1133 1134\n"
    "IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts "
    "OutBcastPkts InOctets OutOctets InMcastOctets OutMcastOctets "
    "InBcastOctets OutBcastOctets InCsumErrors InNoECTPkts InECT1Pkts "
    "InECT0Pkts InCEPkts ReasmOverlaps\n"
    "IpExt: 1000 1001 1002 1003 1004 1005 1006 1007 1008 1009 1010 1011 1012 "
    "1013 1014 1015 1016 1017\n"
    "MPTcpExt: MPCapableSYNRX MPCapableSYNTX MPCapableSYNACKRX "
    "MPCapableACKRX MPCapableFallbackACK MPCapableFallbackSYNACK "
    "MPCapableSYNTXDrop MPCapableSYNTXDisabled MPCapableEndpAttempt "
    "MPFallbackTokenInit MPTCPRetrans MPJoinNoTokenFound MPJoinSynRx "
    "MPJoinSynBackupRx MPJoinSynAckRx MPJoinSynAckBackupRx "
    "MPJoinSynAckHMacFailure MPJoinAckRx MPJoinAckHMacFailure MPJoinRejected "
    "MPJoinSynTx MPJoinSynTxCreatSkErr MPJoinSynTxBindErr "
    "MPJoinSynTxConnectErr DSSNotMatching DSSCorruptionFallback "
    "DSSCorruptionReset InfiniteMapTx InfiniteMapRx DSSNoMatchTCP "
    "DataCsumErr OFOQueueTail OFOQueue OFOMerge NoDSSInWindow DuplicateData "
    "AddAddr AddAddrTx AddAddrTxDrop EchoAdd EchoAddTx EchoAddTxDrop PortAdd "
    "AddAddrDrop MPJoinPortSynRx MPJoinPortSynAckRx MPJoinPortAckRx "
    "MismatchPortSynRx MismatchPortAckRx RmAddr RmAddrDrop RmAddrTx "
    "RmAddrTxDrop RmSubflow MPPrioTx MPPrioRx MPFailTx MPFailRx "
    "MPFastcloseTx MPFastcloseRx MPRstTx MPRstRx SubflowStale SubflowRecover "
    "SndWndShared RcvWndShared RcvWndConflictUpdate RcvWndConflict "
    "MPCurrEstab Blackhole MPCapableDataFallback MD5SigFallback DssFallback "
    "SimultConnectFallback FallbackFailed WinProbe\n"
    "MPTcpExt: 1000 1001 1002 1003 1004 1005 1006 1007 1008 1009 1010 1011 "
    "1012 1013 1014 1015 1016 1017 1018 1019 1020 1021 1022 1023 1024 1025 "
    "1026 1027 1028 1029 1030 1031 1032 1033 1034 1035 1036 1037 1038 1039 "
    "1040 1041 1042 1043 1044 1045 1046 1047 1048 1049 1050 1051 1052 1053 "
    "1054 1055 1056 1057 1058 1059 1060 1061 1062 1063 1064 1065 1066 1067 "
    "1068 1069 1070 1071 1072 1073 1074 1075\n";

static const char snmp_text[] =
    "Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors "
    "ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests "
    "OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails "
    "FragOKs FragFails FragCreates OutTransmits\n"
    "Ip: 1000 1001 1002 1003 1004 1005 1006 1007 1008 1009 1010 1011 1012 "
    "1013 1014 1015 1016 1017 1018 1019\n"
    "Icmp: InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds "
    "InParmProbs InSrcQuenchs InRedirects InEchos InEchoReps InTimestamps "
    "InTimestampReps InAddrMasks InAddrMaskReps OutMsgs OutErrors "
    "OutRateLimitGlobal OutRateLimitHost OutDestUnreachs OutTimeExcds "
    "OutParmProbs OutSrcQuenchs OutRedirects OutEchos OutEchoReps "
    "OutTimestamps OutTimestampReps OutAddrMasks OutAddrMaskReps\n"
    "Icmp: 1000 1001 1002 1003 1004 1005 1006 1007 1008 1009 1010 1011 1012 "
    "1013 1014 1015 1016 1017 1018 1019 1020 1021 1022 1023 1024 1025 1026 "
    "1027 1028\n"
    "IcmpMsg: InType3\n"
    "IcmpMsg: 1000\n"
    "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens "
    "AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs "
    "OutRsts InCsumErrors\n"
    "Tcp: 1000 1001 1002 -1 1004 5000 1006 1007 1008 1009 1010 1011 1012 "
    "1013 1014\n"
    "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors "
    "SndbufErrors InCsumErrors IgnoredMulti MemErrors\n"
    "Udp: 1000 1001 1002 1003 1004 1005 1006 1007 1008\n"
    "UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors "
    "SndbufErrors InCsumErrors IgnoredMulti MemErrors\n"
    "UdpLite: 1000 1001 1002 1003 1004 1005 1006 1007 1008\n";

/* A temporary file of len bytes of text; its path, to free. */
static char *write_file(const char *text, size_t len)
{
    char *path = strdup("/tmp/test_netstat.XXXXXX");
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

START_TEST(parse_real_layout)
{
    qc_netstat_t n;

    ck_assert_uint_eq(qc_netstat_parse(&n, netstat_text, snmp_text),
                      QC_NETSTAT_ALL);
    ck_assert_uint_eq(n.have, QC_NETSTAT_ALL);
    ck_assert_uint_eq(n.listen_overflows, 101);
    ck_assert_uint_eq(n.listen_drops, 103);
    ck_assert_uint_eq(n.reqq_full_drops, 2);
    ck_assert_uint_eq(n.passive_opens, 5000);
}
END_TEST

/* Fields in another order, unknown ones, blanks, CRLF, no last newline. */
START_TEST(parse_any_order)
{
    qc_netstat_t n;

    qc_netstat_parse(&n,
                     "IpExt: InOctets\nIpExt: 7\n"
                     "  TcpExt:\tTCPReqQFullDrop  NewField ListenDrops "
                     "ListenOverflows\r\n"
                     "TcpExt:   3 -1\t  12\t9 \r\n",
                     "Udp: NoPorts\nUdp: 8\n"
                     "Tcp: PassiveOpens MaxConn Future\n"
                     "Tcp: 77 -1 abc");
    ck_assert_uint_eq(n.have, QC_NETSTAT_ALL);
    ck_assert_uint_eq(n.reqq_full_drops, 3);
    ck_assert_uint_eq(n.listen_drops, 12);
    ck_assert_uint_eq(n.listen_overflows, 9);
    ck_assert_uint_eq(n.passive_opens, 77);
}
END_TEST

/* Old kernels have no TCPReqQFullDrop: 0, its bit clear, rest known. */
START_TEST(parse_missing_reqq_full_drop)
{
    qc_netstat_t n;

    qc_netstat_parse(&n,
                     "TcpExt: SyncookiesSent ListenOverflows ListenDrops "
                     "TCPReqQFullDoCookies\n"
                     "TcpExt: 1 20 30 4\n", snmp_text);
    ck_assert_uint_eq(n.have,
                      QC_NETSTAT_ALL & ~QC_NETSTAT_REQQ_FULL_DROPS);
    ck_assert_uint_eq(n.reqq_full_drops, 0);
    ck_assert_uint_eq(n.listen_overflows, 20);
    ck_assert_uint_eq(n.listen_drops, 30);
}
END_TEST

/* No "Tcp:" pair: PassiveOpens unknown, and so the attempts. */
START_TEST(parse_missing_pair)
{
    qc_netstat_t n;
    double attempts, drops;

    qc_netstat_parse(&n, netstat_text,
                     "Ip: Forwarding\nIp: 1\nUdp: InDatagrams\nUdp: 2\n");
    ck_assert_uint_eq(n.have, QC_NETSTAT_ALL & ~QC_NETSTAT_PASSIVE_OPENS);
    ck_assert_uint_eq(n.passive_opens, 0);
    /* "Tcp:" is not a prefix of "TcpExt:" nor the other way round */
    qc_netstat_parse(&n, snmp_text, netstat_text);
    ck_assert_uint_eq(n.have, 0);
    qc_netstat_parse(&n, NULL, NULL);
    ck_assert_uint_eq(n.have, 0);
    qc_netstat_parse(&n, netstat_text, NULL);
    qc_netstat_delta(&n, &n, &attempts, &drops);
    ck_assert(attempts < 0.0);
    ck_assert(drops == 0.0);
}
END_TEST

/* Broken texts: nothing is read from them, and nothing crashes. */
START_TEST(parse_garbage)
{
    static const char *const bad[] = {
        "", "\n", "\n\n\n", "TcpExt:", "TcpExt:\n", "TcpExt:\nTcpExt:",
        "TcpExt: ListenDrops", "TcpExt: ListenDrops\n",
        "TcpExt: ListenDrops\nTcpExt:",
        "TcpExt: ListenDrops\nTcpExt: \n",
        "TcpExt: ListenDrops\nIpExt: 5\n",
        "TcpExt: ListenDrops\n\nTcpExt: 5\n",
        "TcpExt: ListenDrops\nTcpExt: 12x\n",
        "TcpExt: ListenDrops\nTcpExt: -1\n",
        "TcpExt: ListenDrops\nTcpExt: +1\n",
        "TcpExt: ListenDrops\nTcpExt: 0x10\n",
        "TcpExt: ListenDrops\nTcpExt: 18446744073709551616\n",
        "TcpExt: ListenDrops\nTcpExt: 99999999999999999999999\n",
        "TcpExt: 5\nTcpExt: ListenDrops\n",
        "TcpExt: ListenDropsX ListenDrop\nTcpExt: 1 2\n",
        "TcpExt ListenDrops\nTcpExt 5\n",
        "tcpext: ListenDrops\ntcpext: 5\n",
        "TcpExt: ListenDrops\nTcpExt: \x01\x7f\xff\n",
        "Tcp: PassiveOpens\nTcp: -5\n", "Tcp: PassiveOpens\n",
        "Tcp: PassiveOpens\nUdp: 5\n", "Tcp: PassiveOpens 5\n",
    };
    char noise[4096];
    unsigned i, seed = 1;
    qc_netstat_t n;

    for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        ck_assert_msg(qc_netstat_parse(&n, bad[i], bad[i]) == 0,
                      "read something from \"%s\"", bad[i]);
    }
    /* Random bytes, and random bytes after a header line. */
    for (i = 0; i < 200; i++) {
        size_t j, at = i % 2 ? 20 : 0;

        memcpy(noise, "TcpExt: ListenDrops\n", 20);
        for (j = at; j < sizeof(noise) - 1; j++) {
            seed = seed * 1103515245u + 12345u;
            noise[j] = (char)(seed >> 16);
            if (noise[j] == '\0') {
                noise[j] = ' ';
            }
        }
        noise[sizeof(noise) - 1] = '\0';
        ck_assert_uint_eq(qc_netstat_parse(&n, noise, noise), 0);
    }
}
END_TEST

/*
 * The real layout cut at every length: cut at a line's end, a counter
 * is right or unknown; cut inside a number it may be that number's
 * first digits (the reader never hands parse such a cut: read test).
 */
START_TEST(parse_truncated)
{
    size_t len, total = strlen(netstat_text);
    size_t whole = (size_t)(strstr(netstat_text, "IpExt:") - netstat_text);
    char *buf = malloc(total + 1);

    ck_assert_ptr_nonnull(buf);
    for (len = 0; len <= total; len++) {
        qc_netstat_t n;
        int at_eol = len == 0 || netstat_text[len - 1] == '\n';

        memcpy(buf, netstat_text, len);
        buf[len] = '\0';
        qc_netstat_parse(&n, buf, buf);
        ck_assert_uint_eq(n.have & QC_NETSTAT_PASSIVE_OPENS, 0);
        if (n.have & QC_NETSTAT_LISTEN_OVERFLOWS) {
            ck_assert(at_eol ? n.listen_overflows == 101
                      : n.listen_overflows <= 101);
        }
        if (n.have & QC_NETSTAT_LISTEN_DROPS) {
            ck_assert(at_eol ? n.listen_drops == 103
                      : n.listen_drops <= 103);
        }
        if (n.have & QC_NETSTAT_REQQ_FULL_DROPS) {
            ck_assert(at_eol ? n.reqq_full_drops == 2
                      : n.reqq_full_drops <= 2);
        }
        /* once the pair is whole, all three are read */
        if (len >= whole) {
            ck_assert_uint_eq(n.have, QC_NETSTAT_ALL
                              & ~QC_NETSTAT_PASSIVE_OPENS);
        }
    }
    free(buf);
}
END_TEST

START_TEST(parse_max_value)
{
    qc_netstat_t prev, cur;
    double attempts, drops;

    qc_netstat_parse(&cur, "TcpExt: ListenDrops ListenOverflows "
                     "TCPReqQFullDrop\n"
                     "TcpExt: 18446744073709551615 18446744073709551616 "
                     "018446744073709551615\n",
                     "Tcp: PassiveOpens\nTcp: 18446744073709551615");
    ck_assert_uint_eq(cur.have, QC_NETSTAT_LISTEN_DROPS
                      | QC_NETSTAT_PASSIVE_OPENS
                      | QC_NETSTAT_REQQ_FULL_DROPS);
    ck_assert(cur.listen_drops == APR_UINT64_MAX);
    ck_assert(cur.passive_opens == APR_UINT64_MAX);
    /* a leading 0 is the same value */
    ck_assert(cur.reqq_full_drops == APR_UINT64_MAX);
    prev = cur;
    prev.listen_drops -= 2;
    prev.passive_opens -= 5;
    qc_netstat_delta(&prev, &cur, &attempts, &drops);
    ck_assert(drops == 2.0);
    ck_assert(attempts == 7.0);
}
END_TEST

static qc_netstat_t counters(apr_uint64_t opens, apr_uint64_t overflows,
                             apr_uint64_t drops, apr_uint64_t reqq)
{
    qc_netstat_t n;

    n.passive_opens = opens;
    n.listen_overflows = overflows;
    n.listen_drops = drops;
    n.reqq_full_drops = reqq;
    n.have = QC_NETSTAT_ALL;
    return n;
}

START_TEST(delta_normal)
{
    qc_netstat_t prev = counters(1000, 40, 50, 7);
    /* 60 opens; 12 drops, of which 8 overflows and 3 full SYN queue */
    qc_netstat_t cur = counters(1060, 48, 62, 10);
    double attempts, drops;

    qc_netstat_delta(&prev, &cur, &attempts, &drops);
    ck_assert(drops == 12.0);
    ck_assert(attempts == 72.0);
    qc_netstat_delta(&cur, &cur, &attempts, &drops);
    ck_assert(drops == 0.0 && attempts == 0.0);
    /* without TCPReqQFullDrop nothing changes: it is inside ListenDrops */
    prev.have &= ~QC_NETSTAT_REQQ_FULL_DROPS;
    qc_netstat_delta(&prev, &cur, &attempts, &drops);
    ck_assert(drops == 12.0 && attempts == 72.0);
}
END_TEST

START_TEST(delta_backwards)
{
    qc_netstat_t prev = counters(1000, 40, 50, 7);
    qc_netstat_t cur = counters(1060, 48, 3, 0);    /* drops went back */
    double attempts, drops;

    qc_netstat_delta(&prev, &cur, &attempts, &drops);
    ck_assert(drops == 0.0);
    ck_assert(attempts == 60.0);
    cur = counters(10, 48, 62, 10);                 /* opens went back */
    qc_netstat_delta(&prev, &cur, &attempts, &drops);
    ck_assert(drops == 12.0);
    ck_assert(attempts == 12.0);
    cur = counters(0, 0, 0, 0);                     /* a new namespace */
    qc_netstat_delta(&prev, &cur, &attempts, &drops);
    ck_assert(drops == 0.0 && attempts == 0.0);
}
END_TEST

START_TEST(delta_unknown)
{
    qc_netstat_t prev = counters(1000, 40, 50, 7);
    qc_netstat_t cur = counters(1060, 48, 62, 10);
    double attempts, drops;

    prev.have &= ~QC_NETSTAT_PASSIVE_OPENS;
    qc_netstat_delta(&prev, &cur, &attempts, &drops);
    ck_assert(attempts < 0.0 && drops == 12.0);
    cur.have &= ~QC_NETSTAT_LISTEN_DROPS;
    qc_netstat_delta(&prev, &cur, &attempts, &drops);
    ck_assert(attempts < 0.0 && drops < 0.0);
    prev.have = cur.have = 0;
    qc_netstat_delta(&prev, &cur, &attempts, &drops);
    ck_assert(attempts < 0.0 && drops < 0.0);
}
END_TEST

/* Ohta and Andou's R = (N_SYN - N_SYNACK) / N_SYNACK. */
START_TEST(syn_ratio)
{
    /* 110 SYNs, 10 of them dropped: 100 answered, R = 0.1 */
    ck_assert(fabs(qc_syn_ratio(110.0, 10.0) - 0.1) < 1e-12);
    ck_assert(qc_syn_ratio(0.0, 0.0) == 0.0);
    ck_assert(qc_syn_ratio(50.0, 0.0) == 0.0);
    /* every SYN dropped: no answer to divide by, R = drops */
    ck_assert(qc_syn_ratio(30.0, 30.0) == 30.0);
    /* unknown counters (< 0) give 0, never a negative R */
    ck_assert(qc_syn_ratio(-1.0, 5.0) == 0.0);
    ck_assert(qc_syn_ratio(10.0, -1.0) == 0.0);
}
END_TEST

START_TEST(read_files)
{
    char *ext = write_file(netstat_text, strlen(netstat_text));
    /* no newline at the end of the file */
    char *snmp = write_file(snmp_text, strlen(snmp_text) - 1);
    qc_netstat_t n;

    ck_assert_int_eq(qc_netstat_read(&n, ext, snmp), 0);
    ck_assert_uint_eq(n.have, QC_NETSTAT_ALL);
    ck_assert_uint_eq(n.listen_drops, 103);
    ck_assert_uint_eq(n.passive_opens, 5000);
    ck_assert_int_eq(qc_netstat_read(&n, ext, "/nonexistent/snmp"), 0);
    ck_assert_uint_eq(n.have, QC_NETSTAT_ALL & ~QC_NETSTAT_PASSIVE_OPENS);
    ck_assert_int_eq(qc_netstat_read(&n, "/nonexistent/netstat", snmp), 0);
    ck_assert_uint_eq(n.have, QC_NETSTAT_PASSIVE_OPENS);
    ck_assert_int_eq(qc_netstat_read(&n, "/nonexistent/netstat",
                                     "/nonexistent/snmp"), -1);
    ck_assert_uint_eq(n.have, 0);
    /* a directory opens but does not read */
    ck_assert_int_eq(qc_netstat_read(&n, "/", "/"), -1);
    unlink(ext);
    unlink(snmp);
    free(ext);
    free(snmp);
}
END_TEST

/*
 * A file longer than the reader's buffer (16 KB) whose values line
 * reaches past the buffer's end: a number cut there, or one whose end
 * the reader cannot see, must not be read (as a smaller one).
 */
START_TEST(read_long_file)
{
    static const char pair[] = "TcpExt: ListenDrops\nTcpExt: 123456789\n";
    /* data bytes of the buffer after the pair's start; is it read? */
    static const struct {
        size_t seen;
        int read;
    } cut[] = {
        { 20, 0 }, { 33, 0 }, { 37, 0 }, { 38, 1 }, { 48, 1 },
    };
    size_t data = 16384 - 1, plen = sizeof(pair) - 1, i;
    char *text = malloc(2 * data + plen);

    ck_assert_ptr_nonnull(text);
    for (i = 0; i < sizeof(cut) / sizeof(*cut); i++) {
        size_t fill = data - cut[i].seen;
        qc_netstat_t n;
        char *path;

        memset(text, 'x', fill);
        text[fill - 1] = '\n';
        memcpy(text + fill, pair, plen);
        memset(text + fill + plen, 'y', data);
        path = write_file(text, fill + plen + data);
        ck_assert_int_eq(qc_netstat_read(&n, path, "/nonexistent"), 0);
        ck_assert_uint_eq(n.have, cut[i].read ? QC_NETSTAT_LISTEN_DROPS : 0);
        ck_assert_uint_eq(n.listen_drops, cut[i].read ? 123456789 : 0);
        unlink(path);
        free(path);
    }
    free(text);
}
END_TEST

START_TEST(read_proc)
{
    qc_netstat_t n;
    double attempts, drops;

    ck_assert_int_eq(qc_netstat_read(&n, NULL, NULL), 0);
    ck_assert_uint_eq(n.have & (QC_NETSTAT_PASSIVE_OPENS
                                | QC_NETSTAT_LISTEN_OVERFLOWS
                                | QC_NETSTAT_LISTEN_DROPS),
                      QC_NETSTAT_PASSIVE_OPENS | QC_NETSTAT_LISTEN_OVERFLOWS
                      | QC_NETSTAT_LISTEN_DROPS);
    qc_netstat_delta(&n, &n, &attempts, &drops);
    ck_assert(attempts == 0.0 && drops == 0.0);
}
END_TEST

/* A non-blocking IPv4 client of port: its handshake may be dropped. */
static int client(unsigned short port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0
        && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Whether a client's handshake completes within 100 ms. */
static int connected(int fd)
{
    struct pollfd p;
    int err = -1;
    socklen_t len = sizeof(err);

    p.fd = fd;
    p.events = POLLOUT;
    return poll(&p, 1, 100) == 1
           && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0
           && err == 0;
}

/* The queue length once it reaches want, or after 2 s what it is. */
static long queued_when(qc_backlog_t *b, long want, long *limit)
{
    struct timespec ms = { 0, 1000000 };
    long v = -1;
    int i;

    for (i = 0; i < 2000; i++) {
        v = qc_backlog_read_limit(b, limit);
        if (v == want) {
            break;
        }
        nanosleep(&ms, NULL);
    }
    return v;
}

START_TEST(backlog_limit)
{
    qc_backlog_t b, other;
    unsigned short port = 0, none;
    long limit = 0;
    int lfd = qc_test_listener(AF_INET, &port, 7), lfd6, c[3], i;

    ck_assert_int_ge(lfd, 0);
    none = (unsigned short)(port == 65535 ? 1024 : port + 1);
    ck_assert_int_eq(qc_backlog_init(&b, &port, 1), 0);
    ck_assert_int_eq(qc_backlog_init(&other, &none, 1), 0);
    ck_assert_int_eq(qc_backlog_read_limit(&b, &limit), 0);
    ck_assert_int_eq(limit, 7);
    ck_assert_int_eq(qc_backlog_read_limit(&other, &limit), 0);
    ck_assert_int_eq(limit, 0);
    for (i = 0; i < 3; i++) {
        c[i] = client(port);
        ck_assert_int_ge(c[i], 0);
    }
    ck_assert_int_eq(queued_when(&b, 3, &limit), 3);
    ck_assert_int_eq(limit, 7);
    ck_assert_int_eq(qc_backlog_read_limit(&b, NULL), 3);
    ck_assert_int_eq(qc_backlog_read(&b), 3);
    /* httpd's v6 listener on the same port: the limits add up */
    lfd6 = qc_test_listener(AF_INET6, &port, 5);
    if (lfd6 >= 0) {
        ck_assert_int_eq(qc_backlog_read_limit(&b, &limit), 3);
        ck_assert_int_eq(limit, 12);
        close(lfd6);
    }
    close(accept(lfd, NULL, NULL));
    ck_assert_int_eq(qc_backlog_read_limit(&b, &limit), 2);
    ck_assert_int_eq(limit, 7);
    for (i = 0; i < 3; i++) {
        close(c[i]);
    }
    close(lfd);
    qc_backlog_close(&b);
    qc_backlog_close(&other);
    limit = 0;
    ck_assert_int_eq(qc_backlog_read_limit(&b, &limit), -1);
    ck_assert_int_eq(limit, -1);
}
END_TEST

/* What the kernel counted when a queue overflowed (overflow_child). */
typedef struct {
    int skipped;                /* no private network namespace */
    long limit, queued, full;
    qc_netstat_t before, after;
} overflow_t;

#define OVERFLOW_EXTRA 4
#define MAX_CLIENTS 16

/*
 * In a network namespace of its own, so the counters are the test's
 * alone and no drop shows up in anyone's measurement: a listener of
 * limit 7 gets clients until its queue is full, then OVERFLOW_EXTRA
 * more.
 */
static void overflow_child(overflow_t *r)
{
    struct ifreq ifr;
    qc_backlog_t b;
    unsigned short port = 0;
    int s, lfd, c[MAX_CLIENTS], nc = 0;
    struct timespec ms = { 0, 20000000 };

    memset(r, 0, sizeof(*r));
    if (unshare(CLONE_NEWNET) != 0) {
        r->skipped = 1;
        return;
    }
    memset(&ifr, 0, sizeof(ifr));
    strcpy(ifr.ifr_name, "lo");
    /* its loopback starts down */
    s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) {
        r->skipped = 1;
        return;
    }
    if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP;
        r->skipped = ioctl(s, SIOCSIFFLAGS, &ifr) != 0;
    }
    else {
        r->skipped = 1;
    }
    close(s);
    if (r->skipped) {
        return;
    }
    lfd = qc_test_listener(AF_INET, &port, 7);
    if (lfd < 0 || qc_backlog_init(&b, &port, 1) != 0
        || qc_netstat_read(&r->before, NULL, NULL) != 0) {
        return;
    }
    /* One at a time, each handshake done before the next SYN, until
     * one gets no answer: its SYN was dropped. */
    while (nc < MAX_CLIENTS) {
        int fd = client(port);

        c[nc++] = fd;
        if (fd < 0 || !connected(fd)) {
            break;
        }
        queued_when(&b, nc, NULL);
    }
    r->full = qc_backlog_read_limit(&b, NULL);
    while (nc < (int)r->full + OVERFLOW_EXTRA && nc < MAX_CLIENTS) {
        c[nc++] = client(port);
    }
    nanosleep(&ms, NULL);
    r->queued = qc_backlog_read_limit(&b, &r->limit);
    qc_netstat_read(&r->after, NULL, NULL);
    while (nc > 0) {
        if (c[--nc] >= 0) {
            close(c[nc]);
        }
    }
    close(lfd);
    qc_backlog_close(&b);
}

START_TEST(overflow_counted)
{
    overflow_t r;
    double attempts, drops;
    int pipefd[2], status;
    pid_t pid;

    ck_assert_int_eq(pipe(pipefd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(pipefd[0]);
        overflow_child(&r);
        _exit(write(pipefd[1], &r, sizeof(r)) == (ssize_t)sizeof(r)
              ? 0 : 1);
    }
    close(pipefd[1]);
    ck_assert_int_eq(read(pipefd[0], &r, sizeof(r)), (ssize_t)sizeof(r));
    close(pipefd[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (r.skipped) {
        QC_TEST_SKIP("no network namespace of its own (unshare)");
    }
    ck_assert_int_eq(r.limit, 7);
    /* Linux drops only when the queue holds more than its limit */
    ck_assert_int_eq(r.full, 7 + 1);
    ck_assert_int_eq(r.queued, r.full);
    ck_assert_uint_eq(r.after.have | QC_NETSTAT_REQQ_FULL_DROPS,
                      QC_NETSTAT_ALL);
    /* A new namespace's counters start at 0 and are ours alone. */
    ck_assert_uint_eq(r.after.passive_opens - r.before.passive_opens,
                      r.full);
    ck_assert_uint_ge(r.after.listen_overflows - r.before.listen_overflows,
                      OVERFLOW_EXTRA);
    ck_assert_uint_eq(r.after.listen_drops - r.before.listen_drops,
                      r.after.listen_overflows - r.before.listen_overflows);
    ck_assert_uint_eq(r.after.reqq_full_drops, r.before.reqq_full_drops);
    qc_netstat_delta(&r.before, &r.after, &attempts, &drops);
    ck_assert(drops == (double)(r.after.listen_drops
                                - r.before.listen_drops));
    ck_assert(attempts == (double)r.full + drops);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("netstat");
    TCase *parse = tcase_create("parse");
    TCase *delta = tcase_create("delta");
    TCase *proc = tcase_create("proc");

    tcase_add_test(parse, parse_real_layout);
    tcase_add_test(parse, parse_any_order);
    tcase_add_test(parse, parse_missing_reqq_full_drop);
    tcase_add_test(parse, parse_missing_pair);
    tcase_add_test(parse, parse_garbage);
    tcase_add_test(parse, parse_truncated);
    tcase_add_test(parse, parse_max_value);
    tcase_add_test(delta, delta_normal);
    tcase_add_test(delta, delta_backwards);
    tcase_add_test(delta, delta_unknown);
    tcase_add_test(delta, syn_ratio);
    tcase_add_test(proc, read_files);
    tcase_add_test(proc, read_long_file);
    tcase_add_test(proc, read_proc);
    tcase_add_test(proc, backlog_limit);
    tcase_add_test(proc, overflow_counted);
    suite_add_tcase(s, parse);
    suite_add_tcase(s, delta);
    suite_add_tcase(s, proc);
    return qc_test_run(s);
}

/* Licensed under the Apache License, Version 2.0. */

/*
 * Message IDs of the error log, in httpd's manner: APLOGNO(nnnnn) gives
 * "AHnnnnn: ", QC_LOGNO(nnnnn) gives "QCnnnnn: " at the start of a
 * message, so that a monitoring rule or a search can name one message
 * however its wording changes.  An ID is five digits, never reused for
 * another message; doc/messages.md lists each one, and a test checks
 * that every log call carries one and that the catalogue has them all.
 * Used by the module (ap_log_*error) and by the controller (stderr,
 * which the supervisor hands to httpd's error log) alike.
 */

#ifndef QC_LOGNO_H
#define QC_LOGNO_H

#define QC_LOGNO(n) "QC" #n ": "

#endif /* QC_LOGNO_H */

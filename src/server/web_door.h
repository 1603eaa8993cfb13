/* web_door: plugs the pane page's responder (src/web) into a door, so a
 * browser's GET / on the public door gets the page. */
#ifndef AGENTHUB_WEB_DOOR_H
#define AGENTHUB_WEB_DOOR_H

struct grpc_door;
struct web_site;

/* Answers DOOR's plain HTTP requests from SITE (not copied: it must
 * outlive the door).  An empty site answers 404 to every path. */
void web_door_install(struct grpc_door *door, const struct web_site *site);

#endif

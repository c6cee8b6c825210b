package timeline

// script draws the timeline from the JSON in #tl-data: lane headers, then
// only the rows in view (and the spans crossing them), redrawn on scroll;
// selection, findings, filter and the hover card. Written for this page.
//
// The setup (every event before the first one on a window's lane: pages
// created, their first log entries) is one collapsed row at the top, so
// the page opens at the first event of a window; a click on that row, or
// a selection that reaches a setup event, shows it; a filter shows it.
const script = `(function(){
"use strict";
var D=JSON.parse(document.getElementById("tl-data").textContent);
var H=22,LW=150,TW=76;
var box=document.getElementById("tl"),head=document.getElementById("tl-head"),body=document.getElementById("tl-body"),
 layer=document.getElementById("tl-rows"),svg=document.getElementById("tl-links"),tip=document.getElementById("tip"),
 selBox=document.getElementById("sel"),filterIn=document.getElementById("tl-filter"),onlyIn=document.getElementById("tl-only");
var laneX={},laneKind={},ev=D.events,byCmd={},back={},inFinding={};
D.lanes.forEach(function(l,i){laneX[l.id]=TW+i*LW;laneKind[l.id]=l.kind;});
var firstUser=Infinity;ev.forEach(function(e){if(laneKind[e.lane]==="window")firstUser=Math.min(firstUser,e.at);});
function isSetup(e){return e.at<firstUser;}
var setupN=ev.filter(isSetup).length,setupEnd=0,showSetup=false;
ev.forEach(function(e){if(isSetup(e))setupEnd=Math.max(setupEnd,e.at);});
ev.forEach(function(e){
 if(e.cmd){(byCmd[e.cmd]=byCmd[e.cmd]||[]).push(e.id);}
 (e.links||[]).forEach(function(l){(back[l]=back[l]||[]).push(e.id);});
});
D.findings.forEach(function(f){f.events.forEach(function(id){inFinding[id]=true;});});
var sorted=ev.slice().sort(function(a,b){return a.at-b.at||a.id-b.id;});
var rows=[],rowOf={},spans=[],sel={},selList=[],filter="",only=false,pending=false;
function esc(s){return String(s).replace(/[&<>"]/g,function(c){return {"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;"}[c];});}
function ms(ns){return (ns/1e6).toFixed(1)+" ms";}
function lastAtOrBefore(t){var lo=0,hi=rows.length;while(lo<hi){var m=(lo+hi)>>1;if(rows[m].at<=t)lo=m+1;else hi=m;}return lo-1;}
head.innerHTML=D.lanes.map(function(l){return '<div class="lane '+esc(l.kind)+'" data-lane="'+esc(l.id)+'" title="'+esc(l.detail||l.label)+
 '" style="left:'+laneX[l.id]+'px"><b>'+esc(l.id)+'</b>'+esc(l.label)+'</div>';}).join("");
head.style.width=(TW+D.lanes.length*LW)+"px";
function layout(){
 var row=setupN>0&&!filter&&!(only&&selList.length);
 rows=sorted.filter(function(e){
  if(row&&!showSetup&&isSetup(e))return false;
  if(only&&selList.length&&!sel[e.id])return false;
  if(!filter)return true;
  return (e.lane+" "+e.kind+" "+e.label+" "+(e.cmd||"")+" "+(e.status||"")+(e.fault?" fault":"")).toLowerCase().indexOf(filter)>=0;
 });
 if(row)rows.unshift({setup:true,id:-1,at:-1});
 rowOf={};rows.forEach(function(e,i){if(!e.setup)rowOf[e.id]=i;});
 spans=[];
 rows.forEach(function(e,i){if(e.end||e.open){var j=lastAtOrBefore(e.open?D.end:e.end);spans.push({e:e,r0:i,r1:Math.max(i,j)});}});
 var h=rows.length*H+H,w=TW+D.lanes.length*LW;
 body.style.height=h+"px";body.style.width=w+"px";svg.setAttribute("height",h);svg.setAttribute("width",w);
 links();render();
}
function cls(e){return " k-"+e.kind+(sel[e.id]?" hl":"")+(e.fault?" fault":"")+(inFinding[e.id]?" bad":"")+
 (e.status&&e.status.indexOf("rejected")===0?" rej":"")+(e.open?" open":"");}
function render(){
 pending=false;
 var top=box.scrollTop,r0=Math.max(0,Math.floor(top/H)-15),r1=Math.min(rows.length-1,Math.ceil((top+box.clientHeight)/H)+15),out=[];
 spans.forEach(function(s){if(s.r1<r0||s.r0>r1)return;var e=s.e;
  out.push('<div class="span'+cls(e)+'" data-id="'+e.id+'" style="top:'+(s.r0*H+4)+'px;height:'+((s.r1-s.r0)*H+14)+'px;left:'+(laneX[e.lane]+2)+'px"></div>');});
 for(var i=r0;i<=r1;i++){var e=rows[i];
  if(e.setup){out.push('<div class="t" style="top:'+(i*H)+'px">setup</div><div class="ev setup'+(showSetup?' shown':'')+'" data-setup="'+setupN+
   '" style="top:'+(i*H+2)+'px;left:'+(box.scrollLeft+TW+4)+'px;width:'+Math.max(200,box.clientWidth-TW-16)+'px">'+(showSetup?'&#9662; ':'&#9656; ')+setupN+
   ' setup events (pages and their first entries, '+ms(0)+' to '+ms(setupEnd)+') before the first window event at '+ms(firstUser)+': click to '+(showSetup?'hide':'show')+'</div>');continue;}
  out.push('<div class="t" style="top:'+(i*H)+'px">'+ms(e.at)+'</div><div class="ev'+cls(e)+'" data-id="'+e.id+'" data-lane="'+esc(e.lane)+'" style="top:'+(i*H+2)+'px;left:'+(laneX[e.lane]+10)+'px">'+esc(e.label)+'</div>');}
 layer.innerHTML=out.join("");
 box.setAttribute("data-rendered",String(Math.max(0,r1-r0+1)));
}
function links(){
 var out=['<defs><marker id="ah" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L8,4L0,8z" fill="#b06000"/></marker></defs>'];
 selList.forEach(function(id){var e=ev[id];(e.links||[]).forEach(function(l){
  if(!sel[l]||rowOf[l]===undefined||rowOf[id]===undefined||ev[l].lane===e.lane)return;var a=ev[l];
  out.push('<line x1="'+(laneX[a.lane]+75)+'" y1="'+(rowOf[l]*H+11)+'" x2="'+(laneX[e.lane]+75)+'" y2="'+(rowOf[id]*H+11)+'" stroke="#b06000" stroke-width="1.2" marker-end="url(#ah)"/>');});});
 svg.innerHTML=out.join("");
}
function schedule(){if(!pending){pending=true;requestAnimationFrame(render);}}
box.addEventListener("scroll",schedule);
window.addEventListener("resize",schedule);
function setSel(ids){
 sel={};selList=[];ids.forEach(function(id){if(!sel[id]&&ev[id]){sel[id]=true;selList.push(id);if(isSetup(ev[id]))showSetup=true;}});
 box.setAttribute("data-selected",selList.join(" "));
 layout();
}
function scrollTo(ids){
 var best=-1;ids.forEach(function(id){var r=rowOf[id];if(r!==undefined&&(best<0||r<rowOf[best]))best=id;});
 if(best<0)return;
 box.scrollTop=Math.max(0,rowOf[best]*H-box.clientHeight/3);
 var x=laneX[ev[best].lane];if(x<box.scrollLeft+TW||x+LW>box.scrollLeft+box.clientWidth)box.scrollLeft=Math.max(0,x-TW);
 render();
}
function related(id){
 var e=ev[id],ids=[id];
 if(e.cmd)ids=ids.concat(byCmd[e.cmd]);
 (e.links||[]).forEach(function(l){ids.push(l);var t=ev[l];if(t&&t.cmd&&t.kind==="issue")ids=ids.concat(byCmd[t.cmd]);});
 (back[id]||[]).forEach(function(l){ids.push(l);});
 return ids;
}
function card(e){
 var h='<b>'+esc(e.kind)+'</b> on '+esc(e.lane)+' at '+ms(e.at)+(e.end?' to '+ms(e.end)+' ('+((e.end-e.at)/1e6).toFixed(1)+' ms)':'')+
  (e.open?' (never decided)':'')+'<br>'+esc(e.label);
 if(e.cmd)h+='<br>command '+esc(e.cmd);
 if(e.status)h+='<br>status: '+esc(e.status);
 if(e.state)h+='<br>window: '+esc(e.state);
 function pre(t,s){if(!s)return "";try{s=JSON.stringify(JSON.parse(s),null,1);}catch(x){}return '<br>'+t+'<pre>'+esc(s)+'</pre>';}
 h+=pre("envelope",e.env)+pre("answer",e.answer);
 if(e.links&&e.links.length)h+='<br>links: '+e.links.map(function(l){return '#'+l+' '+esc(ev[l]?ev[l].kind:"");}).join(", ");
 return h;
}
function selectEvent(id){
 var e=ev[id];if(!e)return;
 activeFinding(-1);
 setSel(related(id));
 selBox.innerHTML='selected: '+card(e);
 scrollTo([id]);
}
function activeFinding(fid){
 var list=document.getElementById("findings");
 Array.prototype.forEach.call(document.querySelectorAll("a.finding"),function(a){
  var on=a.getAttribute("data-finding")===String(fid);a.classList.toggle("active",on);
  if(on&&(a.offsetTop<list.scrollTop||a.offsetTop+a.offsetHeight>list.scrollTop+list.clientHeight))list.scrollTop=a.offsetTop-list.offsetTop-40;});
}
function selectFinding(fid){
 var f=D.findings[fid];if(!f)return;
 activeFinding(fid);
 setSel(f.events);
 selBox.innerHTML='finding <b>'+esc(f.checker)+'</b>: '+f.events.length+' events lit'+(f.events.length?'':' (it names no event of this seed)');
 scrollTo(f.events);
}
layer.addEventListener("click",function(x){
 if(x.target.closest("[data-setup]")){showSetup=!showSetup;layout();return;}
 var t=x.target.closest("[data-id]");if(t)selectEvent(+t.getAttribute("data-id"));});
document.getElementById("findings").addEventListener("click",function(x){var a=x.target.closest("a.finding");if(!a)return;
 x.preventDefault();history.replaceState(null,"","#f"+a.getAttribute("data-finding"));selectFinding(+a.getAttribute("data-finding"));});
layer.addEventListener("mouseover",function(x){var t=x.target.closest("[data-id]");if(!t){tip.style.display="none";return;}
 tip.innerHTML=card(ev[+t.getAttribute("data-id")]);tip.style.display="block";});
layer.addEventListener("mousemove",function(x){tip.style.left=Math.min(x.clientX+14,window.innerWidth-580)+"px";
 tip.style.top=Math.min(x.clientY+14,window.innerHeight-tip.offsetHeight-8)+"px";});
layer.addEventListener("mouseleave",function(){tip.style.display="none";});
filterIn.addEventListener("input",function(){filter=filterIn.value.trim().toLowerCase();layout();});
onlyIn.addEventListener("change",function(){only=onlyIn.checked;layout();if(only)box.scrollTop=0;render();});
layout();
var m=/^#([fe])(\d+)$/.exec(location.hash);
if(m&&m[1]==="f")selectFinding(+m[2]);else if(m)selectEvent(+m[2]);
})();`
